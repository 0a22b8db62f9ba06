/* SPDX-License-Identifier: MIT */
#include "fuzz-python.h"

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

void fuzz_python_start(void)
{
	PyPreConfig pre;
	PyConfig config;

	PyPreConfig_InitIsolatedConfig(&pre);
	pre.allocator = PYMEM_ALLOCATOR_MALLOC;
	if (PyStatus_Exception(Py_PreInitialize(&pre)))
		abort();
	PyConfig_InitIsolatedConfig(&config);
	config.install_signal_handlers = 0;
	config.use_hash_seed = 1;
	config.hash_seed = 0;
	config.write_bytecode = 0;
	if (PyStatus_Exception(Py_InitializeFromConfig(&config)))
		abort();
	PyConfig_Clear(&config);
}
