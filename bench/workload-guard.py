# SPDX-License-Identifier: MIT
"""The import- and file-heavy workload of bench/guard.sh (issue #3).

Usage: python-sb bench/workload-guard.py DATA_DIR

1. Imports about a hundred modules of the standard library, pure Python and
   extension modules alike: every import is a series of stat/open/read calls
   by the import machinery (a "open" audit event per source or .pyc file,
   plus the events of the modules' own start-up code).
2. Walks DATA_DIR, which bench/guard.sh creates (DIRS directories of FILES
   small files each, by default 30 x 100): os.listdir and os.scandir of every
   directory, then for every file os.stat, os.path.exists (os.stat again) and
   open/read, and finally a pathlib glob over the whole tree (os.scandir
   inside) and a stat of each match.

It prints a checksum of what it read and imported, so that no part of the
work can be skipped, and bench/guard.sh compares it between the runs with and
without the guard (the same work must be done in both).
"""

import importlib
import os
import sys
import zlib

MODULES = """
abc argparse array ast asyncio base64 binascii bisect bz2 calendar cmath codecs
collections collections.abc colorsys concurrent.futures configparser
contextlib contextvars copy copyreg csv dataclasses datetime decimal difflib
dis email email.mime.multipart email.mime.text email.parser email.policy enum
filecmp fnmatch fractions ftplib functools gettext glob graphlib gzip hashlib
heapq hmac html html.parser http.client http.cookies http.server imaplib
inspect io ipaddress itertools json json.decoder logging logging.handlers
lzma mailbox math mimetypes numbers operator optparse pathlib pickle pickletools
pkgutil platform plistlib poplib pprint queue quopri random re reprlib sched
secrets selectors shlex shutil signal smtplib socket socketserver sqlite3
ssl statistics string stringprep struct subprocess tarfile tempfile textwrap
threading timeit tokenize tomllib trace traceback types typing unicodedata
unittest unittest.mock urllib.parse urllib.request uuid warnings wave weakref
xml.dom.minidom xml.etree.ElementTree xml.sax zipfile zipimport zoneinfo
""".split()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: workload-guard.py DATA_DIR")
    data = sys.argv[1]
    crc = 0

    # 1. Imports.
    for name in MODULES:
        module = importlib.import_module(name)
        crc = zlib.crc32(module.__name__.encode(), crc)

    # 2. Files: listings, stat, exists, open/read.
    files = 0
    size = 0
    dirs = sorted(os.listdir(data))
    for d in dirs:
        path = os.path.join(data, d)
        names = sorted(os.listdir(path))
        with os.scandir(path) as it:
            scanned = sorted(e.name for e in it)
        if names != scanned:
            sys.exit("listdir and scandir disagree in " + path)
        for name in names:
            f = os.path.join(path, name)
            st = os.stat(f)
            if not os.path.exists(f):
                sys.exit(f + " vanished")
            with open(f, "rb") as fh:
                content = fh.read()
            if len(content) != st.st_size:
                sys.exit(f + ": size differs from stat")
            crc = zlib.crc32(content, crc)
            files += 1
            size += st.st_size

    # 3. pathlib: a glob over the tree (scandir), a stat of each match.
    import pathlib

    globbed = 0
    for p in sorted(pathlib.Path(data).glob("*/*.txt")):
        globbed += p.stat().st_size
        crc = zlib.crc32(p.name.encode(), crc)
    if globbed != size:
        sys.exit("glob saw %d bytes, the walk %d" % (globbed, size))

    print("modules=%d dirs=%d files=%d bytes=%d crc=%08x"
          % (len(MODULES), len(dirs), files, size, crc))


main()
