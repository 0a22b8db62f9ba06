/* SPDX-License-Identifier: MIT */
#pragma once

/* A system call without the C library: the kernel's return value, -errno on
 * failure, and errno (in the thread's storage) untouched. For a task that
 * shares the memory and thread storage of another one still running (a
 * clone(CLONE_VM) child: pid-init.c, supervise-exec.c), where the C library's
 * wrappers would write the other's errno. SB_HAVE_RAW_SYSCALL: this
 * architecture has one. */

#if defined(__x86_64__) || defined(__aarch64__)
#define SB_HAVE_RAW_SYSCALL 1

static inline long sb_raw_syscall(long n, long a, long b, long c, long d, long e)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
#else
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "memory");
	return x0;
#endif
}
#endif
