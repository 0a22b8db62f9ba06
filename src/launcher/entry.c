/* SPDX-License-Identifier: MIT */
#include "launcher.h"

int main(int argc, char **argv)
{
	return sb_launcher_main(argc, argv);
}
