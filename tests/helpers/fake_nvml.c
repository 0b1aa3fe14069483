/* A stand-in libnvidia-ml.so.1 for tests/nvml_spec.lua: the few entry points
 * engine/os/nvml.c resolves, answering from environment variables so that a
 * spec can play a GPU without one.
 *   FAKE_NVML_INIT    an NVML error code nvmlInit_v2 returns (default 0)
 *   FAKE_NVML_SM      SM clock in MHz (default 1980)
 *   FAKE_NVML_REASONS comma-separated masks, one per reasons query, cycling
 *                     (default "1": gpu_idle)
 *   FAKE_NVML_POWER   milliwatts, or "unsupported" (default 123456)
 *   FAKE_NVML_APP_SM  application SM clock target (default 1980)
 *   FAKE_NVML_ENERGY  millijoules the energy counter starts at (default 1000000),
 *                     or "unsupported"; it then grows by FAKE_NVML_ENERGY_STEP
 *                     (default 40000) at every reading
 * Build: cc -shared -fPIC -o DIR/libnvidia-ml.so.1 tests/helpers/fake_nvml.c */
#include <stdlib.h>
#include <string.h>

typedef int ret;
typedef void *dev;

static int env_int(const char *name, int def) {
  const char *s = getenv(name);
  return s && *s ? (int)strtol(s, NULL, 0) : def;
}

static const char *errors[] = {"Success", "Uninitialized", "Invalid Argument", "Not Supported",
                               "Insufficient Permissions", "Already Initialized", "Not Found"};

const char *nvmlErrorString(ret r) {
  if (r == 9) return "Driver Not Loaded";
  return r >= 0 && r < 7 ? errors[r] : "Unknown Error";
}
ret nvmlInit_v2(void) { return env_int("FAKE_NVML_INIT", 0); }
ret nvmlShutdown(void) { return 0; }
ret nvmlDeviceGetCount_v2(unsigned *n) { *n = 1; return 0; }
ret nvmlDeviceGetHandleByIndex_v2(unsigned i, dev *d) {
  if (i > 0) return 2;
  *d = (dev)0x1;
  return 0;
}
ret nvmlDeviceGetHandleByUUID(const char *uuid, dev *d) {
  if (strcmp(uuid, "GPU-fake")) return 6;
  *d = (dev)0x1;
  return 0;
}
ret nvmlDeviceGetClockInfo(dev d, int type, unsigned *mhz) {
  *mhz = type == 1 ? (unsigned)env_int("FAKE_NVML_SM", 1980) : 3201;
  return 0;
}
ret nvmlDeviceGetMaxClockInfo(dev d, int type, unsigned *mhz) {
  *mhz = type == 1 ? 1980 : 3201;
  return 0;
}
ret nvmlDeviceGetClock(dev d, int type, int id, unsigned *mhz) {
  if (id == 3) return 3; /* customer boost max: not supported */
  *mhz = type == 1 ? (unsigned)(id == 1 ? env_int("FAKE_NVML_APP_SM", 1980) : 1980) : 3201;
  return 0;
}
ret nvmlDeviceGetTemperature(dev d, int sensor, unsigned *c) { *c = 41; return 0; }
ret nvmlDeviceGetPowerUsage(dev d, unsigned *mw) {
  const char *s = getenv("FAKE_NVML_POWER");
  if (s && !strcmp(s, "unsupported")) return 3;
  *mw = (unsigned)env_int("FAKE_NVML_POWER", 123456);
  return 0;
}
ret nvmlDeviceGetCurrentClocksEventReasons(dev d, unsigned long long *mask) {
  static int call;
  const char *s = getenv("FAKE_NVML_REASONS");
  if (!s || !*s) s = "1";
  int k = 0, want = call++;
  const char *p = s;
  /* count the fields, then pick field (want mod count) */
  for (const char *q = s; *q; q++) k += *q == ',';
  want %= k + 1;
  while (want-- > 0) p = strchr(p, ',') + 1;
  *mask = strtoull(p, NULL, 0);
  return 0;
}
ret nvmlDeviceGetName(dev d, char *buf, unsigned n) {
  strncpy(buf, "Fake H200", n);
  return 0;
}
ret nvmlDeviceGetUUID(dev d, char *buf, unsigned n) {
  strncpy(buf, "GPU-fake", n);
  return 0;
}
ret nvmlDeviceGetTotalEnergyConsumption(dev d, unsigned long long *mj) {
  static unsigned long long next;
  static int started;
  const char *s = getenv("FAKE_NVML_ENERGY");
  if (s && !strcmp(s, "unsupported")) return 3;
  if (!started) next = strtoull(s && *s ? s : "1000000", NULL, 0), started = 1;
  *mj = next;
  next += (unsigned long long)env_int("FAKE_NVML_ENERGY_STEP", 40000);
  return 0;
}
