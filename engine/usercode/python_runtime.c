/* kb.python's interpreter: which Python, its libpython opened with dlopen, started once (python.h).
 *
 * Which Python: the one KLUABENCH_PYTHON names, else `python3` on PATH. That interpreter is run once
 * (an argument vector, no shell) to say where it lives: its version, sys.executable, sys.prefix and
 * sys.base_prefix (a venv's base), sysconfig's LIBDIR, LDLIBRARY and INSTSONAME, sys.path and its
 * site-packages. Its libpython is then opened (RTLD_GLOBAL: extension modules find the C-API there)
 * and started with PYTHONHOME = its base prefix; the glue then gives the embedded interpreter the
 * probe's sys.path, sys.executable and sys.prefix, so a venv's packages import as they do under that
 * python3, and runs the site-packages' .pth files (editable installs). The environment variables set
 * for the start are put back, in the C environment and in os.environ, so child processes (torch's
 * compile workers) see the user's.
 *
 * Nothing of this runs until a script asks for Python: the binary runs where there is none, and
 * says why kb.python cannot work only then. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "python.h"
#include "python_glue.h" /* build/gen: KB_PYTHON_GLUE, engine/usercode/python_glue.py as a C string */

extern char **environ;

kb_py_api kb_py;

static struct {
  int state; /* 0 not tried, 1 running, -1 failed */
  char why[4096];
  kb_py_runtime rt;
  PyObject *glue;
} g;

/* ---- asking the interpreter ------------------------------------------------------------------ */

/* What the probe prints: NUL-terminated "key=value" entries, paths as the file system has them. */
static const char PROBE[] =
    "import os, site, sys, sysconfig\n"
    "v = sysconfig.get_config_var\n"
    "out = [('version', '%d.%d.%d' % sys.version_info[:3]), ('executable', sys.executable),\n"
    "  ('prefix', sys.prefix), ('exec_prefix', sys.exec_prefix),\n"
    "  ('base_prefix', sys.base_prefix), ('base_exec_prefix', sys.base_exec_prefix),\n"
    "  ('libdir', v('LIBDIR') or ''), ('ldlibrary', v('LDLIBRARY') or ''),\n"
    "  ('instsoname', v('INSTSONAME') or ''), ('multiarch', v('MULTIARCH') or ''),\n"
    "  ('shared', str(v('Py_ENABLE_SHARED') or 0))]\n"
    "out += [('path', p) for p in sys.path]\n"
    "sites = site.getsitepackages() if hasattr(site, 'getsitepackages') else []\n"
    "if site.ENABLE_USER_SITE: sites.append(site.getusersitepackages())\n"
    "out += [('site', p) for p in sites]\n"
    "sys.stdout.buffer.write(b''.join(os.fsencode(k) + b'=' + os.fsencode(x) + b'\\0' for k, x in out))\n";

#define PROBE_MAX_OUT ((size_t)1 << 20)
#define PROBE_TIMEOUT_MS 60000

typedef struct {
  char *out; /* NUL-separated entries */
  size_t n;
  char err[1024]; /* the end of its stderr */
  size_t nerr;
} probe_output;

/* Reads what fds 0 (stdout) and 1 (stderr) give until both end or the time is up: 0, or -1 on
 * timeout or an output past PROBE_MAX_OUT. */
static int drain(int fds[2], probe_output *o) {
  size_t cap = 0;
  int open_fds = 2;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (open_fds > 0) {
    struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long waited = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
    if (waited >= PROBE_TIMEOUT_MS) return -1;
    int r = poll(p, 2, (int)(PROBE_TIMEOUT_MS - waited));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    for (int i = 0; i < 2; i++) {
      if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t k = read(fds[i], buf, sizeof buf);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        close(fds[i]);
        fds[i] = -1;
        open_fds--;
        p[i].fd = -1;
        continue;
      }
      if (i == 0) {
        if (o->n + (size_t)k > PROBE_MAX_OUT) return -1;
        if (o->n + (size_t)k > cap) {
          cap = (o->n + (size_t)k) * 2;
          char *grown = realloc(o->out, cap);
          if (!grown) return -1;
          o->out = grown;
        }
        memcpy(o->out + o->n, buf, (size_t)k);
        o->n += (size_t)k;
      } else { /* keep the last bytes of stderr: a traceback ends with its message */
        for (ssize_t j = 0; j < k; j++) {
          if (o->nerr == sizeof o->err - 1) {
            memmove(o->err, o->err + 1, sizeof o->err - 2);
            o->nerr--;
          }
          o->err[o->nerr++] = buf[j];
        }
        o->err[o->nerr] = 0;
      }
    }
  }
  return 0;
}

/* Runs `python -c PROBE` (python searched on PATH when it has no slash) into *o. NULL, or why not. */
static const char *run_probe(const char *python, probe_output *o) {
  static char why[1024];
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    snprintf(why, sizeof why, "cannot make a pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
      if (out[i] >= 0) close(out[i]);
    }
    return why;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, dfl;
  sigemptyset(&none);
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGINT);
  sigaddset(&dfl, SIGTERM);
  sigaddset(&dfl, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char *argv[] = {(char *)python, "-c", (char *)PROBE, NULL};
  pid_t pid;
  int rc = strchr(python, '/') ? posix_spawn(&pid, python, &fa, &attr, argv, environ)
                               : posix_spawnp(&pid, python, &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    snprintf(why, sizeof why, "cannot run it: %s", strerror(rc));
    return why;
  }
  int fds[2] = {out[0], err[0]};
  int drained = drain(fds, o);
  for (int i = 0; i < 2; i++) {
    if (fds[i] >= 0) close(fds[i]);
  }
  if (drained != 0) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (drained != 0) {
    snprintf(why, sizeof why, "it gave no answer within %d s, or more than %zu bytes", PROBE_TIMEOUT_MS / 1000,
             PROBE_MAX_OUT);
    return why;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char tail[600];
    kb_py_printable(tail, sizeof tail, o->err, o->nerr);
    snprintf(why, sizeof why, "it failed (%s %d)%s%s", WIFEXITED(status) ? "exit status" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), o->nerr ? ": " : "", tail);
    return why;
  }
  return NULL;
}

/* The value of the first entry `key` in the probe's output, or "". */
static const char *entry(const probe_output *o, const char *key) {
  size_t k = strlen(key);
  for (size_t i = 0; i < o->n;) {
    const char *e = o->out + i;
    size_t len = strnlen(e, o->n - i);
    if (len > k && strncmp(e, key, k) == 0 && e[k] == '=') return e + k + 1;
    i += len + 1;
  }
  return "";
}

/* A tuple of the values of every entry `key`, in order (a new reference), or NULL. */
static PyObject *entries(const probe_output *o, const char *key) {
  size_t k = strlen(key);
  Py_ssize_t count = 0;
  for (int pass = 0; pass < 2; pass++) {
    PyObject *t = pass ? kb_py.PyTuple_New(count) : NULL;
    if (pass && !t) return NULL;
    Py_ssize_t j = 0;
    for (size_t i = 0; i < o->n;) {
      const char *e = o->out + i;
      size_t len = strnlen(e, o->n - i);
      if (len > k && strncmp(e, key, k) == 0 && e[k] == '=') {
        if (pass) {
          PyObject *b = kb_py.PyBytes_FromStringAndSize(e + k + 1, (Py_ssize_t)(len - k - 1));
          if (!b) {
            kb_py.Py_DecRef(t);
            return NULL;
          }
          kb_py.PyTuple_SetItem(t, j, b);
        }
        j++;
      }
      i += len + 1;
    }
    if (pass) return t;
    count = j;
  }
  return NULL;
}

/* ---- libpython ----------------------------------------------------------------------------- */

/* Opens the first libpython of the probe's that exists; NULL and why (every path tried) when none. */
static void *open_libpython(const probe_output *o, char *why, size_t n) {
  const char *libdir = entry(o, "libdir"), *multiarch = entry(o, "multiarch");
  const char *names[2] = {entry(o, "instsoname"), entry(o, "ldlibrary")};
  const char *dirs[3] = {libdir, NULL, NULL};
  char base_lib[1100], arch_dir[1100];
  snprintf(base_lib, sizeof base_lib, "%s/lib", entry(o, "base_prefix"));
  dirs[1] = base_lib;
  if (*multiarch) {
    snprintf(arch_dir, sizeof arch_dir, "%s/%s", libdir, multiarch);
    dirs[2] = arch_dir;
  }
  size_t used = (size_t)snprintf(why, n, "tried");
  for (int d = 0; d < 4; d++) {
    for (int i = 0; i < 2; i++) {
      const char *name = names[i];
      /* a static library (Py_ENABLE_SHARED=0) cannot be opened; a bare name is searched by ld.so last */
      if (!*name || strstr(name, ".so") == NULL || (d < 3 && (!dirs[d] || !*dirs[d]))) continue;
      char path[1024];
      if (d < 3) snprintf(path, sizeof path, "%.600s/%.400s", dirs[d], name);
      else snprintf(path, sizeof path, "%.1000s", name);
      void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
      if (h) {
        memcpy(g.rt.library, path, sizeof path);
        return h;
      }
      if (used < n) used += (size_t)snprintf(why + used, n - used, " %s (%s);", path, dlerror());
    }
  }
  if (used == 5) snprintf(why, n, "the interpreter names no shared libpython (LDLIBRARY '%s', INSTSONAME '%s')",
                          names[1], names[0]);
  return NULL;
}

/* Resolves every function of python.h; NULL, or why not. */
static const char *resolve(void *lib) {
  static char why[256];
  static const struct {
    size_t offset;
    const char *name;
  } fns[] = {
#define KB_PY_ENTRY(ret, name, args) {offsetof(kb_py_api, name), #name},
      KB_PY_FUNCTIONS(KB_PY_ENTRY)
#undef KB_PY_ENTRY
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    void *f = dlsym(lib, fns[i].name);
    if (!f) {
      snprintf(why, sizeof why, "it has no function %s", fns[i].name);
      return why;
    }
    memcpy((char *)&kb_py + fns[i].offset, &f, sizeof f);
  }
  kb_py.none = (PyObject *)dlsym(lib, "_Py_NoneStruct");
  PyObject **buffer = (PyObject **)dlsym(lib, "PyExc_BufferError");
  PyObject **runtime = (PyObject **)dlsym(lib, "PyExc_RuntimeError");
  if (!kb_py.none || !buffer || !runtime) return "it has no _Py_NoneStruct, PyExc_BufferError or PyExc_RuntimeError";
  kb_py.buffer_error = *buffer;
  kb_py.runtime_error = *runtime;
  return NULL;
}

/* ---- starting --------------------------------------------------------------------------------- */

/* The variables set around Py_InitializeEx, and what they were. */
static const char *const START_ENV[] = {"PYTHONHOME", "PYTHONUNBUFFERED", NULL};

/* os.environ back as the process had it: a tuple of (name, value or None) (a new reference). */
static PyObject *saved_environment(char *const saved[]) {
  Py_ssize_t count = 0;
  while (START_ENV[count]) count++;
  PyObject *t = kb_py.PyTuple_New(count);
  if (!t) return NULL;
  for (int i = 0; START_ENV[i]; i++) {
    PyObject *pair = kb_py.PyTuple_New(2);
    if (!pair) break;
    kb_py.PyTuple_SetItem(pair, 0, kb_py.PyBytes_FromStringAndSize(START_ENV[i], (Py_ssize_t)strlen(START_ENV[i])));
    if (saved[i]) {
      kb_py.PyTuple_SetItem(pair, 1, kb_py.PyBytes_FromStringAndSize(saved[i], (Py_ssize_t)strlen(saved[i])));
    } else {
      kb_py.Py_IncRef(kb_py.none);
      kb_py.PyTuple_SetItem(pair, 1, kb_py.none);
    }
    kb_py.PyTuple_SetItem(t, i, pair);
  }
  return t;
}

/* Calls builtins.name(*args) (steals args); a new reference or NULL with an exception set. */
static PyObject *call_builtin(const char *name, PyObject *args) {
  PyObject *builtins = kb_py.PyImport_ImportModule("builtins");
  PyObject *fn = builtins ? kb_py.PyObject_GetAttrString(builtins, name) : NULL;
  PyObject *r = fn && args ? kb_py.PyObject_CallObject(fn, args) : NULL;
  if (fn) kb_py.Py_DecRef(fn);
  if (builtins) kb_py.Py_DecRef(builtins);
  if (args) kb_py.Py_DecRef(args);
  return r;
}

static PyObject *pair(PyObject *a, PyObject *b) {
  PyObject *t = kb_py.PyTuple_New(2);
  if (t) {
    kb_py.PyTuple_SetItem(t, 0, a);
    kb_py.PyTuple_SetItem(t, 1, b);
  }
  return t;
}

static PyObject *str_of(const char *s) { return kb_py.PyUnicode_FromStringAndSize(s, (Py_ssize_t)strlen(s)); }
static PyObject *bytes_of(const char *s) { return kb_py.PyBytes_FromStringAndSize(s, (Py_ssize_t)strlen(s)); }

/* Runs the glue in a module of its own, _kluabench, and calls its _init with what the probe said;
 * with the GIL held. NULL, or why not. */
static const char *run_glue(const probe_output *o, char *const saved[], char *why, size_t n) {
  PyObject *types = kb_py.PyImport_ImportModule("types");
  PyObject *module_type = types ? kb_py.PyObject_GetAttrString(types, "ModuleType") : NULL;
  PyObject *mod_args = pair(str_of("_kluabench"), str_of("kluabench's side of kb.python (engine/usercode/python_glue.py)"));
  PyObject *mod = module_type && mod_args ? kb_py.PyObject_CallObject(module_type, mod_args) : NULL;
  if (mod_args) kb_py.Py_DecRef(mod_args);
  PyObject *dict = mod ? kb_py.PyObject_GetAttrString(mod, "__dict__") : NULL;
  PyObject *code = NULL, *done = NULL, *init = NULL, *r = NULL;
  if (dict) {
    PyObject *args = kb_py.PyTuple_New(3);
    if (args) {
      kb_py.PyTuple_SetItem(args, 0, str_of(KB_PYTHON_GLUE));
      kb_py.PyTuple_SetItem(args, 1, str_of("<kluabench python glue>"));
      kb_py.PyTuple_SetItem(args, 2, str_of("exec"));
    }
    code = call_builtin("compile", args);
  }
  if (code) { /* the pair takes a reference of each: code and dict stay ours too */
    kb_py.Py_IncRef(code);
    kb_py.Py_IncRef(dict);
    done = call_builtin("exec", pair(code, dict));
  }
  if (done) {
    g.glue = mod;
    init = kb_py.PyObject_GetAttrString(mod, "_init");
  }
  if (init) {
    PyObject *args = kb_py.PyTuple_New(7);
    if (args) {
      kb_py.PyTuple_SetItem(args, 0, bytes_of(entry(o, "executable")));
      kb_py.PyTuple_SetItem(args, 1, bytes_of(entry(o, "prefix")));
      kb_py.PyTuple_SetItem(args, 2, bytes_of(entry(o, "exec_prefix")));
      kb_py.PyTuple_SetItem(args, 3, entries(o, "path"));
      kb_py.PyTuple_SetItem(args, 4, entries(o, "site"));
      kb_py.PyTuple_SetItem(args, 5, saved_environment(saved));
      const kb_backend *dev = kb_default_backend();
      int cuda = dev && kb_on_cuda(dev);
      kb_py.PyTuple_SetItem(args, 6, cuda ? pair(kb_py.PyLong_FromVoidPtr(dev->stream),
                                                 kb_py.PyLong_FromLongLong(dev->ordinal))
                                          : (kb_py.Py_IncRef(kb_py.none), kb_py.none));
      r = kb_py.PyObject_CallObject(init, args);
      kb_py.Py_DecRef(args);
    }
  }
  const char *err = NULL;
  if (!r) {
    char msg[1500];
    kb_py_take_error(msg, sizeof msg);
    snprintf(why, n, "its start failed: %s", msg);
    err = why;
    g.glue = NULL;
    if (mod) kb_py.Py_DecRef(mod);
  }
  PyObject *refs[] = {types, module_type, dict, code, done, init, r};
  for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
    if (refs[i]) kb_py.Py_DecRef(refs[i]);
  }
  return err;
}

/* "3.11.2" -> 3011; 0 when unreadable. */
static int major_minor(const char *v) {
  int a = 0, b = 0;
  return sscanf(v, "%d.%d", &a, &b) == 2 ? a * 1000 + b : 0;
}

/* Everything kb_py_start does once the probe answered; NULL, or why not. */
static const char *start_with(const probe_output *o, char *why, size_t n) {
  const char *version = entry(o, "version");
  snprintf(g.rt.version, sizeof g.rt.version, "%s", version);
  snprintf(g.rt.executable, sizeof g.rt.executable, "%s", entry(o, "executable"));
  snprintf(g.rt.prefix, sizeof g.rt.prefix, "%s", entry(o, "prefix"));
  if (major_minor(version) < 3008) {
    snprintf(why, n, "it is Python %s; kb.python needs 3.8 or later", *version ? version : "(unknown version)");
    return why;
  }
  char tried[1200];
  void *lib = open_libpython(o, tried, sizeof tried);
  if (!lib) {
    snprintf(why, n, "its libpython cannot be opened (Py_ENABLE_SHARED=%s; %s): use a Python built with a shared "
                     "libpython, as Debian's /usr/bin/python3 (with libpython3.X) and venvs over it are, through "
                     "KLUABENCH_PYTHON",
             entry(o, "shared"), tried);
    return why;
  }
  const char *missing = resolve(lib);
  if (missing) {
    snprintf(why, n, "%.1000s: %.500s", g.rt.library, missing);
    return why;
  }
  /* the library must be the interpreter's own: a libpython of another version has another stdlib */
  if (major_minor(kb_py.Py_GetVersion()) != major_minor(version)) {
    snprintf(why, n, "%.1000s is Python %.20s, the interpreter %s", g.rt.library, kb_py.Py_GetVersion(), version);
    return why;
  }
  if (kb_py.Py_IsInitialized()) {
    snprintf(why, n, "%.1000s was started by someone else in this process", g.rt.library);
    return why;
  }
  const char *base = entry(o, "base_prefix"), *base_exec = entry(o, "base_exec_prefix");
  if (strcmp(base, base_exec) != 0) snprintf(g.rt.home, sizeof g.rt.home, "%s:%s", base, base_exec);
  else snprintf(g.rt.home, sizeof g.rt.home, "%s", base);
  char *saved[3] = {NULL, NULL, NULL};
  for (int i = 0; START_ENV[i]; i++) {
    const char *v = getenv(START_ENV[i]);
    saved[i] = v ? strdup(v) : NULL;
  }
  /* PYTHONUNBUFFERED: the interpreter is never finalized, so nothing buffered in sys.stdout would be
   * written at exit */
  setenv("PYTHONHOME", g.rt.home, 1);
  setenv("PYTHONUNBUFFERED", "1", 1);
  kb_py.Py_InitializeEx(0); /* 0: no signal handlers, Ctrl-C stays kluabench's (signals.c) */
  for (int i = 0; START_ENV[i]; i++) {
    if (saved[i]) setenv(START_ENV[i], saved[i], 1);
    else unsetenv(START_ENV[i]);
  }
  const char *err = run_glue(o, saved, why, n);
  for (int i = 0; START_ENV[i]; i++) free(saved[i]);
  kb_py.PyEval_SaveThread(); /* the GIL is taken by each call from now on */
  return err;
}

const char *kb_py_start(void) {
  if (g.state) return g.state > 0 ? NULL : g.why;
  g.state = -1;
  const char *env = getenv("KLUABENCH_PYTHON");
  int named = env && *env;
  snprintf(g.rt.asked, sizeof g.rt.asked, "%s", named ? env : "python3");
  char what[700];
  if (named) snprintf(what, sizeof what, "KLUABENCH_PYTHON=%s", env);
  else snprintf(what, sizeof what, "python3 on PATH (KLUABENCH_PYTHON is not set)");
  probe_output o = {0};
  const char *err = run_probe(g.rt.asked, &o);
  char why[1900];
  if (err) {
    snprintf(g.why, sizeof g.why, "kb.python: no Python: %s: %s", what, err);
  } else if ((err = start_with(&o, why, sizeof why)) != NULL) {
    snprintf(g.why, sizeof g.why, "kb.python: %s (%s%s%s): %s", what, *g.rt.executable ? g.rt.executable : "?",
             *g.rt.version ? ", Python " : "", g.rt.version, err);
  } else {
    g.state = 1;
  }
  free(o.out);
  return g.state > 0 ? NULL : g.why;
}

const kb_py_runtime *kb_py_runtime_info(void) { return &g.rt; }

void kb_py_printable(char *out, size_t n, const char *in, size_t len) {
  size_t used = 0;
  out[0] = 0;
  while (len > 0 && used + 1 < n) { /* line by line: a traceback keeps its lines */
    const char *nl = memchr(in, '\n', len);
    size_t line = nl ? (size_t)(nl - in) : len;
    used += kb_printable(out + used, n - used, in, line);
    if (nl && used + 1 < n) {
      out[used++] = '\n';
      out[used] = 0;
    }
    in += line + (nl ? 1 : 0);
    len -= line + (nl ? 1 : 0);
  }
}

PyObject *kb_py_glue(const char *name) {
  static struct {
    const char *name;
    PyObject *value;
  } cache[16];
  for (int i = 0; i < 16; i++) {
    if (cache[i].name && strcmp(cache[i].name, name) == 0) return cache[i].value;
    if (!cache[i].name) {
      PyObject *v = g.glue ? kb_py.PyObject_GetAttrString(g.glue, name) : NULL;
      if (!v) return NULL;
      cache[i].name = name;
      cache[i].value = v; /* kept for the process */
      return v;
    }
  }
  return NULL;
}

int kb_py_glue_set(const char *name, PyObject *value) {
  return g.glue ? kb_py.PyObject_SetAttrString(g.glue, name, value) : -1;
}

void kb_py_take_error(char *buf, size_t n) {
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  kb_py.PyErr_Fetch(&type, &value, &tb);
  if (!type) {
    snprintf(buf, n, "unknown error (no Python exception was set)");
    return;
  }
  kb_py.PyErr_NormalizeException(&type, &value, &tb);
  PyObject *describe = g.glue ? kb_py.PyObject_GetAttrString(g.glue, "_describe") : NULL;
  PyObject *text = NULL;
  if (describe) {
    PyObject *args = kb_py.PyTuple_New(2);
    if (args) {
      PyObject *a = value ? value : kb_py.none, *b = tb ? tb : kb_py.none;
      kb_py.Py_IncRef(a);
      kb_py.Py_IncRef(b);
      kb_py.PyTuple_SetItem(args, 0, a);
      kb_py.PyTuple_SetItem(args, 1, b);
      text = kb_py.PyObject_CallObject(describe, args);
      kb_py.Py_DecRef(args);
    }
    kb_py.Py_DecRef(describe);
  }
  if (!text) {
    kb_py.PyErr_Clear();
    text = value ? kb_py.PyObject_Str(value) : NULL;
  }
  Py_ssize_t len = 0;
  const char *s = text ? kb_py.PyUnicode_AsUTF8AndSize(text, &len) : NULL;
  if (s) kb_py_printable(buf, n, s, (size_t)len);
  else snprintf(buf, n, "an exception that cannot be shown");
  kb_py.PyErr_Clear();
  PyObject *refs[] = {type, value, tb, text};
  for (size_t i = 0; i < 4; i++) {
    if (refs[i]) kb_py.Py_DecRef(refs[i]);
  }
}
