# kluabench's side of kb.python, run once in a module of its own (_kluabench) when the interpreter
# starts (engine/usercode/python_runtime.c compiles this file into the binary). The host calls these
# functions with the GIL held; _dlpack, _array_data, _release and _sync are the host's own
# (python_dlpack.c), set on this module by python.c before anything is lent.
import os
import sys

_dlpack = _array_data = _release = _sync = None
_stream = None  # (pointer, device index) of the engine's CUDA stream; None on the cpu backend
_torch_stream = None  # torch.cuda.ExternalStream over it, once torch is imported
_raw_stream = None  # torch's fast query of its current stream (torch._C._cuda_getCurrentRawStream)

DLPACK_CPU, DLPACK_CUDA = 1, 2
# numpy's type strings of the dtypes NumPy has (it has no bfloat16)
_TYPESTR = {'f16': '<f2', 'f32': '<f4', 'f64': '<f8'}
# packages kb.python names in records when a module's globals use them
_FRAMEWORKS = ('numpy', 'torch', 'triton', 'transformers', 'liger_kernel', 'jax', 'cupy')


def _init(executable, prefix, exec_prefix, path, sites, environ, stream):
    """The interpreter as the probed python3 has it: its sys.path (a venv's packages), executable and
    prefixes, its site-packages' .pth files run, and os.environ without what the start set."""
    global _stream
    for name, value in environ:
        key = os.fsdecode(name)
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = os.fsdecode(value)
    sys.executable = os.fsdecode(executable)
    if hasattr(sys, '_base_executable'):
        sys._base_executable = sys.executable
    sys.prefix, sys.exec_prefix = os.fsdecode(prefix), os.fsdecode(exec_prefix)
    wanted = [os.fsdecode(p) for p in path]
    import site
    done = set()
    try:
        done.update(site.getsitepackages())
        if site.ENABLE_USER_SITE:
            done.add(site.getusersitepackages())
    except Exception:
        pass
    sys.path[:] = wanted
    for d in (os.fsdecode(s) for s in sites):
        if d not in done and os.path.isdir(d):
            site.addsitedir(d)  # its .pth files: editable installs, namespace packages
    sys.path[:] = wanted + [p for p in sys.path if p not in wanted]
    _stream = stream


def _describe(exc, tb=None):
    """An exception as kb.python's errors give it: its type and message, then the last lines of its
    traceback (the glue's own frames left out)."""
    import traceback
    tb = tb if tb is not None else getattr(exc, '__traceback__', None)
    frames = [f for f in traceback.extract_tb(tb) if f.filename != '<kluabench python glue>']
    head = traceback.format_exception_only(type(exc), exc)[-1].strip()
    lines = []
    for line in traceback.format_list(frames):
        lines.extend(line.rstrip('\n').split('\n'))
    if not lines:
        return head
    shown = lines[-12:]
    more = '' if len(shown) == len(lines) else ', its last %d lines' % len(shown)
    return '%s\nTraceback (most recent call last%s):\n%s' % (head, more, '\n'.join(shown))


def _forget_frames(exc):
    """Drops the locals of an exception's frames (and of its cause and context): a view of a lent
    tensor there would otherwise outlive the call."""
    import traceback
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__


class Tensor:
    """A kluabench tensor lent to Python for the length of one call. numpy.from_dlpack and
    torch.from_dlpack view its memory through __dlpack__ (no copy); numpy.asarray does too for cpu
    f16, f32 and f64 tensors (__array_interface__, writable). After the call every new view is
    refused; a view kept past the call is an error of the call (kluabench keeps the memory alive)."""

    __slots__ = ('_token', '_device', 'shape', 'dtype')

    def __init__(self, token, device, shape, dtype):
        self._token, self._device, self.shape, self.dtype = token, device, shape, dtype

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError('a kluabench tensor is lent without a copy: __dlpack__(copy=True) is refused')
        if dl_device is not None and tuple(dl_device) != self._device:
            raise BufferError('a kluabench tensor on %r cannot be exported to %r' % (self._device, tuple(dl_device)))
        if self._device[0] == DLPACK_CUDA and stream is not None and stream != -1 and \
                (_stream is None or stream != _stream[0]):
            _sync(self._token)  # another stream reads it: the engine's queued work finishes first
        return _dlpack(self._token)

    def __dlpack_device__(self):
        return self._device

    @property
    def __array_interface__(self):
        typestr = _TYPESTR.get(self.dtype)
        if typestr is None or self._device[0] != DLPACK_CPU:
            raise AttributeError('__array_interface__: only cpu tensors of f16, f32 and f64 have one '
                                 '(this one is %s on %r; use torch.from_dlpack)' % (self.dtype, self._device))
        return {'version': 3, 'shape': self.shape, 'typestr': typestr, 'data': (_array_data(self._token), False)}

    def __del__(self):
        if _release is not None:
            _release(self._token)

    def __repr__(self):
        return 'kluabench.Tensor(shape=%r, dtype=%r, device=%r)' % (self.shape, self.dtype, self._device)


def _bind_torch():
    """Makes the engine's stream torch's current stream (once torch is imported, on the cuda backend),
    so that what a provider queues through torch runs on it: every protocol and the CUPTI trace see it.
    True when it was bound just now."""
    global _torch_stream, _raw_stream
    torch = sys.modules.get('torch')
    if torch is None or _stream is None:
        return False
    if _torch_stream is None:
        if not torch.cuda.is_available():
            return False
        ptr, index = _stream
        torch.cuda.set_device(index)
        _torch_stream = torch.cuda.ExternalStream(ptr, device=torch.device('cuda', index))
        _raw_stream = getattr(torch._C, '_cuda_getCurrentRawStream', None)
        torch.cuda.set_stream(_torch_stream)
        return True
    if _raw_stream is None or _raw_stream(_stream[1]) != _stream[0]:
        torch.cuda.set_stream(_torch_stream)  # the provider left another stream current
    return False


def call(fn, args, as_object):
    """fn(*args) on the engine's stream: (1, results) or (0, message). results: the value itself
    (as_object), else what _results makes of it."""
    bound_before = _torch_stream is not None
    _bind_torch()
    try:
        result = fn(*args)
    except BaseException as e:  # KeyboardInterrupt and SystemExit too: the host decides
        message = _describe(e)
        _forget_frames(e)
        return (0, message)
    finally:
        del args
    if not bound_before and _bind_torch():
        sys.modules['torch'].cuda.synchronize()  # torch came with this call, on its own stream
    if as_object:
        return (1, result)
    try:
        return (1, _results(result))
    except _BadResult as e:
        return (0, str(e))


class _BadResult(Exception):
    pass


def _type_name(x):
    t = type(x)
    return t.__name__ if t.__module__ == 'builtins' else '%s.%s' % (t.__module__, t.__qualname__)


def _results(result):
    """What a call returned as the host reads it: a tuple of (kind, value[, ...]) for None (0), a
    boolean (1), an integer (2), a float (3), a string (4) and a tensor (5: the DLPack capsule, the
    object); a tuple or list of them is several results."""
    if result is None:
        return ()
    items = result if type(result) in (tuple, list) else (result,)
    return tuple(_result(x, i) for i, x in enumerate(items, 1))


def _result(x, i):
    t = type(x)
    if x is None:
        return (0, None)
    if t is bool:
        return (1, x)
    if t is float:
        return (3, x)
    if t is int and -2 ** 63 <= x < 2 ** 63:
        return (2, x)
    if t is str:
        return (4, x)
    if hasattr(t, '__dlpack__') and hasattr(t, '__dlpack_device__'):
        try:
            kind, index = (int(v) for v in x.__dlpack_device__())
            # the consumer's stream: torch queues a wait on it when its current stream is another
            cap = x.__dlpack__(stream=_stream[0]) if kind == DLPACK_CUDA and _stream else x.__dlpack__()
        except Exception as e:
            raise _BadResult('result %d (a %s) cannot be exported through DLPack: %s: %s'
                             % (i, _type_name(x), type(e).__name__, e)) from None
        return (5, cap, x)
    import numbers
    if isinstance(x, numbers.Integral):
        if not -2 ** 63 <= int(x) < 2 ** 63:
            raise _BadResult('result %d is an integer outside 64 bits (%d)' % (i, int(x)))
        return (2, int(x))
    if isinstance(x, numbers.Real):  # NumPy's scalars
        return (3, float(x))
    raise _BadResult('result %d is a %s' % (i, _type_name(x)))


def load(spec, is_path):
    """Imports a module by name, or a file by path as the module its stem names (its folder put first on
    sys.path, as `python file.py` does): (module, name, file or None)."""
    import importlib
    import importlib.util
    spec = os.fsdecode(spec)
    if not is_path:
        mod = importlib.import_module(spec)
        return (mod, mod.__name__, getattr(mod, '__file__', None))
    path = os.path.abspath(spec)
    name = os.path.splitext(os.path.basename(path))[0]
    old = sys.modules.get(name)
    if old is not None:
        if os.path.abspath(getattr(old, '__file__', None) or '') == path:
            return (old, name, path)
        raise ImportError("a module named '%s' is loaded already (from %s): rename %s"
                          % (name, getattr(old, '__file__', None) or 'the interpreter', path))
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec_ = importlib.util.spec_from_file_location(name, path)
    if spec_ is None or spec_.loader is None:
        raise ImportError('%s is not a Python source file' % path)
    mod = importlib.util.module_from_spec(spec_)
    sys.modules[name] = mod
    try:
        spec_.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return (mod, name, path)


def function(mod, name):
    """The callable `name` of a module, or an error naming what it has."""
    fn = getattr(mod, name, None)
    if fn is None or not callable(fn):
        names = sorted(k for k, v in vars(mod).items() if callable(v) and not k.startswith('_'))
        what = 'no attribute' if fn is None else 'an attribute that is not callable,'
        raise AttributeError("module '%s' has %s '%s' (its callables: %s)"
                             % (mod.__name__, what, name, ', '.join(names[:30]) or 'none'))
    return fn


def _top_packages(mod):
    """The top-level packages a module's globals use (modules and what was imported from them), the
    standard library's and the module's own left out."""
    stdlib = getattr(sys, 'stdlib_module_names', None)
    if stdlib is None:  # Python < 3.10
        import sysconfig
        lib = sysconfig.get_paths()['stdlib']
        stdlib = {n for n, m in sys.modules.items() if n in sys.builtin_module_names or
                  (getattr(m, '__file__', None) or '').startswith(lib)}
    names = set()
    for v in vars(mod).values():
        owner = getattr(v, '__name__', None) if type(v) is type(sys) else getattr(v, '__module__', None)
        if isinstance(owner, str) and owner:
            names.add(owner.split('.')[0])
    own = mod.__name__.split('.')[0]
    return sorted(n for n in names if n not in stdlib and n != own and not n.startswith('_')
                  and n != 'builtins')


def _version(name):
    m = sys.modules.get(name)
    v = getattr(m, '__version__', None) if m is not None else None
    if isinstance(v, str):
        return v
    try:
        from importlib import metadata
        dists = getattr(metadata, 'packages_distributions', lambda: {})().get(name) or \
            [name, name.replace('_', '-')]
        for d in dists:
            try:
                return metadata.version(d)
            except Exception:
                pass
    except Exception:
        pass
    return None


def versions(mod, names):
    """((package, version), ...) of the packages `names` lists, else of those the module's globals use,
    as far as they can be read ('unknown' otherwise; 'not imported' for a listed one not loaded)."""
    if names is None:
        names = _top_packages(mod)
    out = []
    for n in names:
        v = _version(n) if n in sys.modules or '.' not in n else None
        out.append((n, v or ('unknown' if n in sys.modules else 'not imported')))
    return tuple(out)


def describe_object(x):
    """What tostring shows of a Python object kb.python holds."""
    r = repr(x)
    return '%s: %s' % (_type_name(x), r if len(r) <= 200 else r[:197] + '...')
