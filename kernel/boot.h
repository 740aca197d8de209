// What the boot hart learned from the device tree (filled before anything else).
#pragma once
#include "fdt.h"

extern BootInfo g_boot;
