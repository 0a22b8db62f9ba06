/* SPDX-License-Identifier: MIT */
/* CPython's Programs/python.c (the main of `python`), compiled like
 * python-sb's entry.c rather than taken from Debian's python.o: that object
 * holds LTO bytecode, so the linker's LTO plugin would place its main()
 * elsewhere than entry.c's and shift everything after it (bench/meson.build). */
#include <Python.h>

int main(int argc, char **argv)
{
	return Py_BytesMain(argc, argv);
}
