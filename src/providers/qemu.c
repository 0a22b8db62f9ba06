/* SPDX-License-Identifier: MIT */
/* os-sandbox=qemu (spec section 8, issue 15): a micro-VM per run. qemu's
 * microvm machine boots Debian's kernel directly (no firmware, no disk) with
 * an initramfs written per run (qemu-initramfs.h: the guest's init, the
 * modules of virtio-mmio, the console ports and 9p, the run's configuration
 * and the handover record). The guest sees the grants only (the interpreter,
 * the shared libraries, python-sb, the rule files, expose-*), each shared by
 * qemu over virtio-9p, read-only in qemu itself but expose-rw, ignore=
 * masked, and no network device. Its init runs python-sb again, which loads
 * the seccomp filter and the limits and runs the guard, as under every
 * wrapper; stdin, stdout, stderr and the status lines travel on four virtio
 * console ports bound to the caller's descriptors.
 *
 * A separate kernel: a kernel exploit of the program's reaches the guest's
 * kernel, and what it then reads is what qemu shares. A small file's grant
 * (the script, the rule files, the loader's cache) is copied into the
 * initramfs rather than shared with its directory; a large one (python-sb)
 * shares its directory, read-only, though the guest binds the file alone.
 *
 * Accelerator: TCG (emulation) unless qemu.use_kvm=true, and then only
 * where a probe boot shows KVM runs a guest (kvm_works()). Nested KVM, as on
 * the CI's virtual machines, may run no guest at all and stall rather than
 * fail (issue 15): a default that tried it would cost the probe's time once
 * per machine and kernel, which the user asks for with use_kvm. The guest's kernel calibrates its
 * clock from the host's TSC frequency given on its command line: under emulation its calibration
 * against the PIT stalls when the host is loaded. */
#include "provider.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "boundary.h"
#include "grants.h"
#include "libexec.h"
#include "qemu-initramfs.h"
#include "rule-files.h"
#include "units.h"
#include "wrap-common.h"

#define QEMU_BINARY  "qemu-system-x86_64"
#define QEMU_PACKAGE "qemu-system-x86"
#define INIT_NAME    "python-sb-qemu-init"
#define KERNEL_NAME  "python-sb-qemu-kernel"

static const char *const virtfs_modes[] = {"auto", "on", "off", NULL};
static const char *const security_models[] = {"passthrough", "mapped-xattr", "mapped-file", "none",
					      NULL};
static const char *const closures[] = {"full", "sparse", NULL};

static const struct sb_provider_param_def params[] = {
    /* true: KVM when /dev/kvm can be opened and a probe boot runs under it
     * (else TCG with a warning); unset or false: TCG (see above). */
    {"use_kvm", SB_PARAM_BOOL, NULL, NULL},
    {"memory", SB_PARAM_MIB, NULL, "2048"},
    /* The guest kernel's messages and the init's on stderr. */
    {"show_boot_console", SB_PARAM_BOOL, NULL, NULL},
    {"start_timeout", SB_PARAM_SECONDS, NULL, "(90 s with KVM, 180 s with TCG)"},
    /* The original's: the shares are always virtio-9p here, so off is
     * refused when the machine is built; auto and on are what it does. */
    {"virtfs", SB_PARAM_CHOICE, virtfs_modes, NULL},
    {"virtfs_stage", SB_PARAM_CHOICE, virtfs_modes, NULL}, /* the alias of virtfs */
    {"virtfs_security_model", SB_PARAM_CHOICE, security_models, NULL},
    /* The original's library closure of a cloud image: nothing to copy
     * here (the library directories are shared), accepted for its
     * profiles. */
    {"ld_closure_libs", SB_PARAM_CHOICE, closures, NULL},
    {"guest_diag", SB_PARAM_TEXT, NULL, NULL}, /* the original's older key */
    {NULL},
};

/* qemu.memory: an integer of MiB, at most one suffix (k: KiB ... E: EiB);
 * the profile check accepted its form. */
static unsigned long long memory_mib(const char *v)
{
	static const char suffixes[] = "kmgtpe";
	unsigned long long n = strtoull(v, NULL, 10), mib;
	const char *unit = v + strspn(v, "0123456789");
	const char *s = *unit ? strchr(suffixes, tolower((unsigned char)*unit)) : NULL;

	if (!s)
		return n;
	mib = s == suffixes ? n / 1024 : n;
	for (const char *i = suffixes + 2; i <= s; i++)
		mib = mib > ULLONG_MAX / 1024 ? ULLONG_MAX : mib * 1024;
	return mib;
}

static int find_own_kernel(const char *self, char **ret);

static int probe(char **reterr)
{
	_cleanup_(sb_qemu_kernel_done) struct sb_qemu_kernel k = {0};
	_cleanup_free_ char *own = NULL;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int r = sb_wrap_probe_binary(QEMU_BINARY, QEMU_PACKAGE, reterr);

	if (r < 0)
		return r;
	self[n > 0 ? n : 0] = '\0';
	r = find_own_kernel(self, &own);
	if (r < 0)
		return r;
	return sb_qemu_kernel_find(getenv("PYSANDBOXES_QEMU_KERNEL"), own, &k, reterr);
}

static int prepare(struct sb_boundary *b, const struct sb_profile *p,
		   const struct sb_interp_paths *interp)
{
	int r = sb_provider_collect_grants(b, p, interp);

	/* The existing rule files are shared read-only over the grants; one
	 * python-sb would read once it exists cannot be. */
	if (r >= 0)
		r = sb_rule_files_check_missing(p, &b->rule_file_conflict);
	if (r >= 0)
		r = sb_strv_pushf(&b->notes, "network: none (the virtual machine has no network "
					     "device)");
	if (r >= 0 && p->n_ignores)
		r = sb_strv_pushf(&b->notes, "ignore=: what matches now is masked (an empty file "
					     "or read-only directory); what appears later only the "
					     "Python guard hides");
	return r;
}

/* ------------------------------------------------------------------------ */
/* The shares */

struct share {
	char *path; /* resolved */
	bool writable, file;
	off_t size;
};

/* A file grant up to this size is copied into the initramfs; a larger one
 * (python-sb itself) shares its directory, read-only. */
#define COPY_MAX (1 << 20)

static int cmp_share(const void *a, const void *b)
{
	return strcmp(((const struct share *)a)->path, ((const struct share *)b)->path);
}

struct plan {
	char **argv;
	struct sb_buf config;
	struct share *shares;
	size_t n_shares;
	char **dirs; /* the shared directories, parallel to their tags */
	bool *dir_writable;
	size_t n_devices;
	bool guest_sysfs; /* a grant under /sys: the guest's own, read-only */
	char **copies;	  /* small file grants, copied into the initramfs */
};

static void plan_done(struct plan *pl)
{
	sb_strv_free(pl->argv);
	sb_buf_reset(&pl->config);
	for (size_t i = 0; i < pl->n_shares; i++)
		free(pl->shares[i].path);
	free(pl->shares);
	sb_strv_free(pl->dirs);
	free(pl->dir_writable);
	sb_strv_free(pl->copies);
}

static int put_entry(struct sb_buf *b, const char *key, const char *value)
{
	int r = sb_buf_printf(b, "%s=%s", key, value);

	return r < 0 ? r : sb_buf_putc(b, '\0');
}

/* The grants and the rule files at their resolved paths (what the guest
 * mounts), the missing optional ones left out. */
static int collect_shares(struct plan *pl, const struct sb_boundary *b, const struct sb_profile *p,
			  const char *cwd)
{
	size_t n_files = sb_strv_length(p->files);

	pl->shares = calloc(b->n_paths + n_files + 1, sizeof(*pl->shares));
	if (!pl->shares)
		return -ENOMEM;
	for (size_t i = 0; i < b->n_paths + n_files; i++) {
		const char *path = i < b->n_paths ? b->paths[i].path : p->files[i - b->n_paths];
		_cleanup_free_ char *absolute = NULL;
		char resolved[PATH_MAX];
		struct stat st;

		if (path[0] != '/') {
			path = absolute = sb_path_join(cwd, path);
			if (!path)
				return -ENOMEM;
		}
		/* The guest's own /dev, /proc and /sys (the CPU list). */
		if (sb_path_under(path, "/dev") || sb_path_under(path, "/proc"))
			continue;
		if (sb_path_under(path, "/sys")) {
			pl->guest_sysfs = true;
			continue;
		}
		if (!realpath(path, resolved) || stat(resolved, &st) < 0) {
			if (i >= b->n_paths || b->paths[i].optional)
				continue;
			return -errno;
		}
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			continue;
		pl->shares[pl->n_shares].path = strdup(resolved);
		if (!pl->shares[pl->n_shares].path)
			return -ENOMEM;
		pl->shares[pl->n_shares].writable = i < b->n_paths && b->paths[i].writable;
		pl->shares[pl->n_shares].file = !S_ISDIR(st.st_mode);
		pl->shares[pl->n_shares].size = st.st_size;
		pl->n_shares++;
	}
	qsort(pl->shares, pl->n_shares, sizeof(*pl->shares), cmp_share);
	return 0;
}

/* Whether a directory shared earlier gives path with this right already. */
static bool covered(const struct plan *pl, size_t upto, const char *path, bool writable)
{
	bool found = false, right = false;

	/* The deepest share above decides what the guest sees there. */
	for (size_t i = 0; i < upto; i++)
		if (!pl->shares[i].file && sb_path_under(path, pl->shares[i].path)) {
			found = true;
			right = pl->shares[i].writable;
		}
	return found && right == writable;
}

/* One 9p device for dir (a new one unless the same directory is shared
 * already with that right); *ret_tag: its mount tag. */
static int add_device(struct plan *pl, const char *dir, bool writable, const char *model,
		      char tag[32])
{
	_cleanup_free_ char *fsdev = NULL, *device = NULL;
	bool *rights;
	int r;

	for (size_t i = 0; i < pl->n_devices; i++)
		if (pl->dir_writable[i] == writable && streq(pl->dirs[i], dir)) {
			snprintf(tag, 32, "s%zu", i);
			return 0;
		}
	snprintf(tag, 32, "s%zu", pl->n_devices);
	/* Commas in a path are doubled in qemu's option syntax. */
	{
		struct sb_buf escaped = {0};

		for (const char *c = dir; *c; c++) {
			r = *c == ',' ? sb_buf_puts(&escaped, ",,") : sb_buf_putc(&escaped, *c);
			if (r < 0) {
				sb_buf_reset(&escaped);
				return r;
			}
		}
		if (asprintf(&fsdev, "local,id=f%zu,path=%s,security_model=%s,multidevs=remap%s",
			     pl->n_devices, escaped.len ? escaped.data : "/", model,
			     writable ? "" : ",readonly=on") < 0)
			fsdev = NULL;
		sb_buf_reset(&escaped);
	}
	if (asprintf(&device, "virtio-9p-device,fsdev=f%zu,mount_tag=%s", pl->n_devices, tag) < 0)
		device = NULL;
	if (!fsdev || !device)
		return -ENOMEM;
	r = sb_argv_add(&pl->argv, "-fsdev", fsdev, "-device", device, NULL);
	if (r < 0)
		return r;
	rights = realloc(pl->dir_writable, (pl->n_devices + 1) * sizeof(*rights));
	if (!rights)
		return -ENOMEM;
	pl->dir_writable = rights;
	r = sb_strv_push(&pl->dirs, dir);
	if (r < 0)
		return r;
	pl->dir_writable[pl->n_devices++] = writable;
	return 0;
}

/* The 9p devices and the guest's mounts, parents before children. */
static int build_shares(struct plan *pl, const struct sb_profile *p)
{
	const char *model = sb_wrap_param(p, SB_OS_QEMU, "virtfs_security_model");
	int r = 0;

	/* none: like passthrough, but a failure to set an owner is no error
	 * (an unprivileged caller). */
	if (!model)
		model = "none";
	for (size_t i = 0; r >= 0 && i < pl->n_shares; i++) {
		const struct share *s = &pl->shares[i];
		_cleanup_free_ char *entry = NULL, *dir = NULL;
		char tag[32];

		if (covered(pl, i, s->path, s->writable))
			continue;
		if (s->file && !s->writable && s->size <= COPY_MAX) {
			if (asprintf(&entry, "%zu:%s", sb_strv_length(pl->copies), s->path) < 0)
				return -ENOMEM;
			r = sb_strv_push(&pl->copies, s->path);
			if (r >= 0)
				r = put_entry(&pl->config, "copy", entry);
			continue;
		}
		if (s->file) {
			dir = strdup(s->path);
			if (!dir)
				return -ENOMEM;
			*strrchr(dir, '/') = '\0';
			r = add_device(pl, dir[0] ? dir : "/", false, model, tag);
		} else {
			r = add_device(pl, s->path, s->writable, model, tag);
		}
		if (r >= 0 && asprintf(&entry, "%s:%s", tag, s->path) < 0)
			r = -ENOMEM;
		if (r >= 0)
			r = put_entry(&pl->config,
				      s->file	    ? "file"
				      : s->writable ? "rw"
						    : "ro",
				      entry);
	}
	return r;
}

/* The root's links into /usr (/bin, /lib64...) as the host has them. */
static int build_links(struct plan *pl)
{
	static const char *const roots[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(roots); i++) {
		char target[PATH_MAX];
		ssize_t n = readlink(roots[i], target, sizeof(target) - 1);

		if (n <= 0)
			continue;
		target[n] = '\0';
		r = put_entry(&pl->config, "link", roots[i]);
		if (r >= 0)
			r = put_entry(&pl->config, "to", target);
	}
	return r;
}

static int build_masks(struct plan *pl, const struct sb_boundary *b, const struct sb_profile *p,
		       char **reterr)
{
	_cleanup_(sb_wrap_ignored_done) struct sb_wrap_ignored_set set = {0};
	int r;

	r = sb_wrap_collect_ignored(b, p, &set, reterr);
	for (size_t i = 0; r >= 0 && i < set.n; i++) {
		char resolved[PATH_MAX];

		if (!realpath(set.items[i].path, resolved))
			continue;
		r = put_entry(&pl->config, set.items[i].dir ? "mask-dir" : "mask-file", resolved);
	}
	return r;
}

/* ------------------------------------------------------------------------ */
/* The ports: the caller's descriptors as qemu's character devices */

/* fd as a descriptor qemu may open with this access mode (its file backend
 * opens /dev/fdset/N, which must match): fd itself, or /proc/self/fd/N
 * opened again (a terminal is open for both), or /dev/null when fd is
 * closed. Returns the path for -chardev. */
static int port_path(struct plan *pl, int fd, int set, bool input, char **ret)
{
	int want = input ? O_RDONLY : O_WRONLY, flags = fcntl(fd, F_GETFL), use;
	char opt[64];
	int r;

	if (flags < 0) {
		*ret = strdup("/dev/null");
		return *ret ? 0 : -ENOMEM;
	}
	/* Inherited by qemu (not close-on-exec), closed when python-sb exits:
	 * python-sb only waits for qemu. -add-fd takes no standard stream. */
	if ((flags & O_ACCMODE) != want) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		use = open(path, want | O_NOCTTY);
	} else {
		use = fcntl(fd, F_DUPFD, 3);
	}
	if (use < 0)
		return -errno;
	snprintf(opt, sizeof(opt), "fd=%d,set=%d", use, set);
	r = sb_argv_add(&pl->argv, "-add-fd", opt, NULL);
	if (r < 0)
		return r;
	return asprintf(ret, "/dev/fdset/%d", set) < 0 ? -ENOMEM : 0;
}

static int add_port(struct plan *pl, const char *name, int fd, int n, bool input)
{
	_cleanup_free_ char *path = NULL, *chardev = NULL, *device = NULL;
	int r;

	/* qemu 7.2's file backend writes only: the input is its stdio
	 * backend, which reads qemu's stdin (python-sb's) and hands its end
	 * on to the guest as the port's end of file. */
	if (input)
		r = asprintf(&chardev, "stdio,id=c%d,signal=off", n) < 0 ? -ENOMEM : 0;
	else {
		r = port_path(pl, fd, n + 1, input, &path);
		if (r >= 0 && asprintf(&chardev, "file,id=c%d,path=%s,append=on", n, path) < 0)
			r = -ENOMEM;
	}
	if (r < 0)
		return r;
	if (asprintf(&device, "virtserialport,chardev=c%d,name=%s", n, name) < 0)
		return -ENOMEM;
	return sb_argv_add(&pl->argv, "-chardev", chardev, "-device", device, NULL);
}

/* ------------------------------------------------------------------------ */
/* The machine */

static bool is_digits_suffix(const char *v)
{
	const char *c = v + strspn(v, "0123456789");

	return c != v && (*c == '\0' || (strchr("kKmMgGtTpPeE", *c) && c[1] == '\0'));
}

/* The host's TSC frequency in kHz (the first "cpu MHz" of /proc/cpuinfo),
 * for the guest kernel's tsc_early_khz= and lpj=; 0 when unknown. */
static unsigned long host_khz(void)
{
	_cleanup_free_ char *info = NULL;
	const char *line;
	size_t len;
	double mhz;

	if (sb_read_file("/proc/cpuinfo", 1u << 20, &info, &len) < 0)
		return 0;
	line = strstr(info, "cpu MHz");
	if (!line || !(line = strchr(line, ':')) || sscanf(line + 1, "%lf", &mhz) != 1)
		return 0;
	return (unsigned long)(mhz * 1000);
}

static int kernel_command_line(bool console, bool kvm, char **ret)
{
	unsigned long khz = host_khz();
	struct sb_buf b = {0};
	int r;

	/* panic=-1 and reboot=t with -no-reboot: whatever ends the guest
	 * ends qemu at once. */
	r = sb_buf_puts(&b, "rdinit=/init panic=-1 reboot=t noreplace-smp i8042.noaux i8042.nokbd "
			    "i8042.nopnp cryptomgr.notests");
	if (r >= 0)
		r = sb_buf_puts(&b, console ? " console=ttyS0 loglevel=7" : " quiet loglevel=0");
	/* The guest's random pool seeded from the CPU's RDRAND (qemu's comes
	 * from the host's generator), as Debian's kernel does by default:
	 * otherwise the interpreter's first read of /dev/urandom waits for
	 * the kernel to gather entropy, seconds under emulation. */
	if (r >= 0)
		r = sb_buf_puts(&b, " random.trust_cpu=on");
	/* TCG executes nothing speculatively: the guest kernel's mitigations
	 * would only slow the emulation down. */
	if (r >= 0 && !kvm)
		r = sb_buf_puts(&b, " mitigations=off");
	/* The guest's clock from the host's, so that it does not calibrate
	 * it against the PIT (lpj: loops per jiffy at HZ=250). */
	if (r >= 0 && khz)
		r = sb_buf_printf(&b, " tsc_early_khz=%lu tsc=reliable lpj=%lu", khz, khz * 4);
	if (r < 0) {
		sb_buf_reset(&b);
		return r;
	}
	*ret = sb_buf_steal(&b);
	return 0;
}

static bool param_true(const struct sb_profile *p, const char *key)
{
	return sb_wrap_param_true(sb_wrap_param(p, SB_OS_QEMU, key));
}

/* The guest's init. */
static int find_init(const char *self, char **ret, char **reterr)
{
	int r =
	    sb_libexec_find(self, INIT_NAME, SB_QEMU_INIT_RELATIVE, SB_QEMU_INIT_PATH, R_OK, ret);

	if (r == -ENOENT)
		return sb_error(reterr, r,
				"os-sandbox=qemu: the guest's init (%s) is not installed beside "
				"python-sb",
				SB_QEMU_INIT_PATH);
	return r;
}

/* python-sb's own kernel (scripts/qemu-kernel.sh, meson's qemu_kernel
 * option), NULL where none was installed: Debian's is booted then. */
static int find_own_kernel(const char *self, char **ret)
{
	int r = sb_libexec_find(self, KERNEL_NAME, SB_QEMU_KERNEL_RELATIVE, SB_QEMU_KERNEL_PATH,
				R_OK, ret);

	if (r == -ENOENT)
		*ret = NULL;
	return r == -ENOENT ? 0 : r;
}

/* The handover record the launching side wrote (the inner python-sb's
 * --pysandboxes-inside=FD), for the guest. */
static int read_record(const struct sb_wrap_request *req, char **ret, size_t *ret_len,
		       int *ret_status_fd, char **reterr)
{
	_cleanup_free_ char *data = NULL;
	unsigned long long fd = ULLONG_MAX, status = ULLONG_MAX;
	struct stat st;
	ssize_t n;

	for (char *const *a = req->argv; a && *a; a++) {
		const char *v = startswith(*a, "--pysandboxes-inside=");

		if (v && sb_safe_atou64(v, &fd) < 0)
			fd = ULLONG_MAX;
	}
	if (fd > INT_MAX || fstat((int)fd, &st) < 0 || st.st_size <= 0 || st.st_size > 16 << 20)
		return sb_error(reterr, -EBADF, "os-sandbox=qemu: no handover record");
	data = malloc((size_t)st.st_size);
	if (!data)
		return -ENOMEM;
	n = pread((int)fd, data, (size_t)st.st_size, 0);
	if (n != st.st_size)
		return sb_error(reterr, -EIO, "os-sandbox=qemu: cannot read the handover record");
	for (const char *e = data; e < data + n; e += strnlen(e, (size_t)(data + n - e)) + 1) {
		const char *v;

		if ((v = startswith(e, "status-fd=")) && sb_safe_atou64(v, &status) < 0)
			status = ULLONG_MAX;
		/* Descriptors that cannot cross into the guest. */
		if (startswith(e, "report-fd="))
			return sb_error(reterr, -EOPNOTSUPP,
					"--report is not available under os-sandbox=qemu in "
					"this version");
		if (startswith(e, "worker-config="))
			return sb_error(reterr, -EOPNOTSUPP,
					"partial mode is not available under os-sandbox=qemu in "
					"this version");
	}
	if (status > INT_MAX)
		return sb_error(reterr, -EPROTO, "os-sandbox=qemu: a bad handover record");
	*ret_len = (size_t)n;
	*ret_status_fd = (int)status;
	*ret = TAKE_PTR(data);
	return 0;
}

/* The initramfs in a memfd qemu reads through /proc/self/fd. */
static int write_initramfs(const struct sb_qemu_kernel *k, const char *init,
			   const struct sb_buf *config, const char *record, size_t record_len,
			   char *const *copies, int *ret_fd, char **reterr)
{
	_cleanup_close_ int fd = memfd_create("python-sb-initramfs", 0);
	int r;

	if (fd < 0)
		return sb_error(reterr, -errno, "memfd_create: %s", strerror(errno));
	r = sb_qemu_initramfs_write(fd,
				    &(struct sb_qemu_initramfs){
					.init = init,
					.kernel = k,
					.config = config->data,
					.config_len = config->len,
					.record = record,
					.record_len = record_len,
					.copies = copies,
				    },
				    reterr);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Whether KVM runs this kernel here: a guest whose init says so on the
 * serial console and ends the machine, booted under KVM with nothing else.
 * Nested KVM may abort (a CPU model its host cannot set up), stall with no
 * error at all or reset, so anything but the init's line within the time is
 * a no. The verdict is kept in the cache directory, per kernel and qemu
 * binary. */
#define KVM_PROBE_MS   10000
#define KVM_PROBE_SAID INIT_NAME ": probe: the guest runs"

static bool kvm_probe_run(const char *qemu, const char *kernel, const struct sb_qemu_kernel *k,
			  const char *init)
{
	static const char config[] = "probe=1";
	_cleanup_close_ int initrd = memfd_create("python-sb-kvm-probe", 0);
	_cleanup_close_ int console = memfd_create("python-sb-kvm-probe-console", MFD_CLOEXEC);
	_cleanup_close_ int pidfd = -1;
	char said[4096];
	ssize_t n;
	struct sb_qemu_kernel bare = {.image = k->image, .release = k->release};
	posix_spawn_file_actions_t fa;
	char path[64];
	char *argv[] = {(char *)qemu,
			"-M",
			"microvm,x-option-roms=off,rtc=on",
			"-accel",
			"kvm",
			"-cpu",
			"host",
			"-smp",
			"1",
			"-m",
			"256",
			"-nodefaults",
			"-no-user-config",
			"-display",
			"none",
			"-no-reboot",
			"-serial",
			"stdio",
			"-kernel",
			(char *)kernel,
			"-initrd",
			path,
			"-append",
			"rdinit=/init panic=-1 reboot=t console=ttyS0 quiet",
			NULL};
	char *envp[] = {NULL};
	struct pollfd pfd;
	pid_t pid;
	int status, r;

	if (initrd < 0 || console < 0 ||
	    sb_qemu_initramfs_write(initrd,
				    &(struct sb_qemu_initramfs){.init = init,
								.kernel = &bare,
								.config = config,
								.config_len = sizeof(config),
								.record = "",
								.record_len = 1},
				    NULL) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", initrd);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, console, STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	r = posix_spawn(&pid, qemu, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return false;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	pfd = (struct pollfd){.fd = pidfd, .events = POLLIN};
	if (pidfd < 0 || poll(&pfd, 1, KVM_PROBE_MS) <= 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return false;
	n = pread(console, said, sizeof(said) - 1, 0);
	said[n > 0 ? n : 0] = '\0';
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(said, KVM_PROBE_SAID);
}

static bool kvm_works(const char *qemu, const char *kernel, const struct sb_qemu_kernel *k,
		      const char *init, const char *cache)
{
	_cleanup_free_ char *verdict = NULL, *tmp = NULL;
	struct stat st;
	bool ok;

	if (cache && stat(qemu, &st) == 0 &&
	    asprintf(&verdict, "%s/kvm-%s-%lld", cache, k->release, (long long)st.st_mtime) < 0)
		verdict = NULL;
	if (verdict && stat(cache, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 022)) {
		char buf[4] = "";
		_cleanup_close_ int fd = open(verdict, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		if (fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0)
			return buf[0] == 'y';
	} else {
		free(verdict);
		verdict = NULL;
	}
	ok = kvm_probe_run(qemu, kernel, k, init);
	if (verdict && asprintf(&tmp, "%s.%d", verdict, (int)getpid()) >= 0) {
		_cleanup_close_ int fd =
		    open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd >= 0 && write(fd, ok ? "y" : "n", 1) == 1 && rename(tmp, verdict) == 0)
			return ok;
		unlink(tmp);
	}
	return ok;
}

/* Where the unpacked kernel is kept (sb_qemu_kernel_unpack()): root's in
 * /var/cache, another user's in their cache directory. */
static char *cache_dir(char *const *host_env)
{
	const char *xdg = sb_strv_env_get(host_env, "XDG_CACHE_HOME");
	const char *home = sb_strv_env_get(host_env, "HOME");
	char *dir = NULL;

	if (geteuid() == 0)
		dir = strdup("/var/cache/py-sandboxes");
	else if (xdg && xdg[0] == '/')
		dir = sb_path_join(xdg, "py-sandboxes");
	else if (home && home[0] == '/' && asprintf(&dir, "%s/.cache/py-sandboxes", home) < 0)
		dir = NULL;
	return dir;
}

static int build_argv(const struct sb_boundary *b, const struct sb_profile *p,
		      const struct sb_wrap_request *req, char ***ret_argv, char **reterr)
{
	_cleanup_(plan_done) struct plan pl = {0};
	_cleanup_(sb_qemu_kernel_done) struct sb_qemu_kernel k = {0};
	_cleanup_free_ char *qemu = NULL, *setpriv = NULL, *init = NULL, *record = NULL,
			    *cmdline = NULL, *initrd = NULL, *memory = NULL, *kernel = NULL,
			    *own_kernel = NULL, *cache = cache_dir(req->host_env);
	const char *path_env = sb_strv_env_get(req->host_env, "PATH");
	const struct sb_net_rule *allow = sb_wrap_first_allow_rule(p);
	const char *mem = sb_wrap_param(p, SB_OS_QEMU, "memory");
	const char *start = sb_wrap_param(p, SB_OS_QEMU, "start_timeout");
	const char *virtfs =
	    sb_wrap_param(p, SB_OS_QEMU, "virtfs") ?: sb_wrap_param(p, SB_OS_QEMU, "virtfs_stage");
	bool kvm = param_true(p, "use_kvm"), console = param_true(p, "show_boot_console");
	unsigned long long mib = 2048;
	size_t record_len = 0;
	int r, status_fd = -1, initrd_fd = -1;

	if (allow)
		return sb_error(reterr, -EOPNOTSUPP,
				"net=%s (%s:%u) needs a network inside the virtual machine with "
				"a default-drop filter, which os-sandbox=qemu does not have in "
				"this version: remove the net= ALLOW rules (the machine has no "
				"network device) or use another os-sandbox",
				allow->text,
				allow->origin.file ? allow->origin.file : SB_ORIGIN_CLI,
				allow->origin.line);
	r = sb_wrap_find_binary(QEMU_BINARY, QEMU_PACKAGE, path_env, p, &qemu, reterr);
	if (r >= 0)
		r = find_own_kernel(req->argv[0], &own_kernel);
	if (r >= 0)
		r = sb_qemu_kernel_find(sb_strv_env_get(req->host_env, "PYSANDBOXES_QEMU_KERNEL"),
					own_kernel, &k, reterr);
	if (r >= 0)
		r = sb_qemu_kernel_unpack(&k, cache, path_env, p, &kernel, reterr);
	if (r >= 0)
		r = find_init(req->argv[0], &init, reterr);
	if (r >= 0)
		r = read_record(req, &record, &record_len, &status_fd, reterr);
	if (r < 0)
		return r;
	if (kvm && access("/dev/kvm", R_OK | W_OK) < 0) {
		r = sb_strv_pushf(req->warnings,
				  "qemu.use_kvm=true: /dev/kvm cannot be opened (%s), the virtual "
				  "machine is emulated (TCG)",
				  strerror(errno));
		if (r < 0)
			return r;
		kvm = false;
	} else if (kvm && !kvm_works(qemu, kernel, &k, init, cache)) {
		r = sb_strv_pushf(req->warnings,
				  "qemu.use_kvm=true: KVM runs no guest on this machine (nested "
				  "virtualisation?), the virtual machine is emulated (TCG)");
		if (r < 0)
			return r;
		kvm = false;
	}
	/* A bad value fell back to the default with a warning (the profile
	 * check). */
	if (mem && is_digits_suffix(mem))
		mib = memory_mib(mem);
	if (mib < 128)
		return sb_error(reterr, -EINVAL,
				"qemu.memory=%s: the virtual machine needs at least 128 MiB", mem);
	if (asprintf(&memory, "%llu", mib) < 0)
		return -ENOMEM;
	*req->start_timeout_ms = kvm ? 90000 : 180000;
	if (start) {
		char *end;
		double seconds = strtod(start, &end);

		if (*end == '\0' && seconds > 0 && seconds < 1e9)
			*req->start_timeout_ms = (unsigned long long)(seconds * 1000);
	}
	if (virtfs && streq(virtfs, "off"))
		return sb_error(reterr, -EOPNOTSUPP,
				"qemu.virtfs=off: the micro-VM reaches the host's files over "
				"virtio-9p only (there is no image to stage them into)");
	if (b->limits.timeout_ms)
		*req->run_timeout_ms = b->limits.timeout_ms;

	/* Killed with python-sb: qemu has no option of its own for it. */
	if (r >= 0) {
		/* Missing: qemu runs without; untrusted: the run stops. */
		int f = sb_wrap_find_binary("setpriv", "util-linux", path_env, p, &setpriv, reterr);

		if (f >= 0)
			r = sb_argv_add(&pl.argv, setpriv, "--pdeathsig", "KILL", "--", NULL);
		else if (f == -ENOENT) {
			free(*reterr);
			*reterr = NULL;
		} else
			r = f;
	}
	if (r >= 0)
		r = sb_argv_add(&pl.argv, qemu, "-M",
				"microvm,x-option-roms=off,rtc=on,pit=on,pic=on,isa-serial=on",
				"-accel", kvm ? "kvm" : "tcg", "-cpu", kvm ? "host" : "max", "-smp",
				"1", "-m", memory, "-nodefaults", "-no-user-config", "-display",
				"none", "-no-reboot", "-kernel", kernel, NULL);
	if (r >= 0 && console) {
		_cleanup_free_ char *path = NULL, *chardev = NULL;

		r = port_path(&pl, STDERR_FILENO, 10, false, &path);
		if (r >= 0 && asprintf(&chardev, "file,id=boot,path=%s,append=on", path) < 0)
			r = -ENOMEM;
		if (r >= 0)
			r = sb_argv_add(&pl.argv, "-chardev", chardev, "-serial", "chardev:boot",
					NULL);
	} else if (r >= 0) {
		r = sb_argv_add(&pl.argv, "-serial", "none", NULL);
	}
	if (r >= 0)
		r = sb_argv_add(&pl.argv, "-device", "virtio-serial-device,max_ports=5", NULL);
	if (r >= 0)
		r = add_port(&pl, "sb.stdin", STDIN_FILENO, 0, true);
	if (r >= 0)
		r = add_port(&pl, "sb.stdout", STDOUT_FILENO, 1, false);
	if (r >= 0)
		r = add_port(&pl, "sb.stderr", STDERR_FILENO, 2, false);
	if (r >= 0)
		r = add_port(&pl, "sb.status", status_fd, 3, false);

	for (char **m = k.modules; r >= 0 && m && *m; m++)
		r = put_entry(&pl.config, "module", strrchr(*m, '/') + 1);
	if (r >= 0 && console)
		r = put_entry(&pl.config, "verbose", "1");
	if (r >= 0)
		r = collect_shares(&pl, b, p, req->cwd);
	if (r >= 0)
		r = build_shares(&pl, p);
	if (r >= 0 && pl.guest_sysfs)
		r = put_entry(&pl.config, "sysfs", "1");
	if (r >= 0)
		r = build_links(&pl);
	if (r >= 0)
		r = build_masks(&pl, b, p, reterr);
	if (r >= 0)
		r = put_entry(&pl.config, "cwd", req->cwd);
	if (r >= 0)
		r = sb_buf_printf(&pl.config, "uid=%u%cgid=%u%c", (unsigned)geteuid(), '\0',
				  (unsigned)getegid(), '\0');
	for (char *const *a = req->argv; r >= 0 && *a; a++)
		r = put_entry(&pl.config, "arg", *a);
#ifdef SB_HAVE_ASAN
	/* A sanitizer build reads its options before main() (wrap.c). */
	for (char *const *e = req->host_env; r >= 0 && e && *e; e++)
		if (startswith(*e, "ASAN_OPTIONS=") || startswith(*e, "UBSAN_OPTIONS=") ||
		    startswith(*e, "LSAN_OPTIONS="))
			r = put_entry(&pl.config, "env", *e);
#endif
	if (r >= 0)
		r = kernel_command_line(console, kvm, &cmdline);
	if (r >= 0)
		r = write_initramfs(&k, init, &pl.config, record, record_len, pl.copies, &initrd_fd,
				    reterr);
	if (r < 0)
		return r;
	*req->tool_fd = initrd_fd;
	if (asprintf(&initrd, "/proc/self/fd/%d", initrd_fd) < 0)
		return -ENOMEM;
	r = sb_argv_add(&pl.argv, "-initrd", initrd, "-append", cmdline, NULL);
	if (r < 0)
		return r;
	*ret_argv = TAKE_PTR(pl.argv);
	return 0;
}

static int explain(const struct sb_boundary *b, struct sb_buf *out)
{
	return sb_wrap_explain_grants(b,
				      "#   qemu: a micro-VM (its own kernel) that sees only these, "
				      "shared over virtio-9p (the rule files too)\n",
				      out);
}

const struct sb_provider sb_provider_qemu = {
    .name = "qemu",
    .flags = SB_PROVIDER_WRAPS_EXEC | SB_PROVIDER_RECORD_IN_IMAGE | SB_PROVIDER_FILES |
	     SB_PROVIDER_SECCOMP | SB_PROVIDER_LIMITS | SB_PROVIDER_PRIVILEGES,
    .ignore = SB_IGNORE_MASKED,
    .params = params,
    .summary = "a micro-VM: its own kernel, the grants shared over virtio-9p",
    .files_layer = {"Python guard + kernel: the micro-VM's shares",
		    "kernel: the micro-VM's shares (py-sandbox=false)"},
    .probe = probe,
    .prepare = prepare,
    .explain = explain,
    .build_argv = build_argv,
};
