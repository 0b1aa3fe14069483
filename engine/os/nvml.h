/* kb.nvml: GPU clocks, temperature, power and throttle reasons read through
 * NVML, which is loaded at run time (dlopen "libnvidia-ml.so.1") so that the
 * binary starts, and everything but kb.nvml works, where NVML is absent. */
#ifndef KB_NVML_H
#define KB_NVML_H

#include <lua.h>

/* Adds the table `nvml` (available, sample, info, count) to the module table
 * on top of L. Nothing is loaded until the first call of one of them. */
void kb_open_nvml(lua_State *L);

#endif
