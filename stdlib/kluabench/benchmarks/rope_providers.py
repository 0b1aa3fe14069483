"""The Python peers of kluabench's RoPE benchmarks (kluabench.benchmarks.rope, scripts/llama4_rope.lua and
scripts/rope.lua): Hugging Face's eager functions, Liger-Kernel's and torch.compile of Hugging Face's, set up and
called as Liger-Kernel's benchmark scripts (benchmark_llama4_rope.py, benchmark_rope.py) do, and timed by
kluabench's own protocols through kb.python, on the engine's CUDA stream.

  llama4_rope  huggingface    transformers.models.llama4.modeling_llama4.apply_rotary_emb, eager
               liger          liger_kernel.transformers.llama4_rope.liger_llama4_text_rotary_pos_emb
               torch_compile  torch.compile(apply_rotary_emb, dynamic=False)
               q, k: (1, seq, heads, head_dim); freqs_cis = Llama4TextRotaryEmbedding(config)(q, positions)
  rope         huggingface    transformers.models.llama.modeling_llama.apply_rotary_pos_emb, eager
               liger          liger_kernel.transformers.rope.liger_rotary_pos_emb
               torch_compile  torch.compile(apply_rotary_pos_emb, dynamic=False)
               q, k: (1, seq, heads, head_dim) seen through .transpose(1, 2); cos, sin =
               LlamaRotaryEmbedding(config)(k, positions)

The modes, as Liger's benchmarks (the versions with kluabench's sweeps, and the seed record's) build them:
  forward   fn(q, k, *table)
  backward  q_out, k_out = fn(q, k, *table) once, then
            torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True, retain_graph=True)
  full      q_out, k_out = fn(q, k, *table); torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True)
q and k require grad, as Liger's do. The values are kluabench's (kb.randn of the benchmark's seeds, so that the
check compares with kluabench's reference on the same inputs), copied once when the state is made: the timed call
works on its own copies (Liger's kernels rotate q and k, and dq and dk, in place, as in Liger's own benchmark) and
its results stay in Python, so no kluabench tensor is written during timing. The table is Hugging Face's, built
from the model's config with kluabench's theta (Liger's benchmark keeps the config's; times do not depend on it).

scripts/peers/rope_peers.py (the cross-check under triton.testing.do_bench) imports KERNELS and
rotary_embedding from here. Nothing beyond the standard library is imported until a provider is used.
"""
import importlib
import sys

PEERS = ('huggingface', 'liger', 'torch_compile')


class Kernel:
    """What differs between Liger's two RoPE benchmarks: where Hugging Face's function, its rotary embedding and
    config live, the layout q and k are passed in, and Liger-Kernel's entry points (the first that imports is
    used; the autograd Function itself is the fallback)."""

    def __init__(self, name, modeling, hf, embedding, config, embed_input, transposed, atol, liger):
        self.name, self.modeling, self.hf_name = name, modeling, hf
        self.embedding_name, self.config_path = embedding, config
        self.embed_input, self.transposed, self.atol = embed_input, transposed, atol
        self.liger_candidates = liger

    def load(self):
        """Imports Hugging Face's side; sets hf (the eager function), Embedding and Config."""
        mod = importlib.import_module(self.modeling)
        self.hf = getattr(mod, self.hf_name)
        self.Embedding = getattr(mod, self.embedding_name)
        cmod, cname = self.config_path.rsplit(".", 1)
        self.Config = getattr(importlib.import_module(cmod), cname)
        return self

    @property
    def hf_where(self):
        return f"{self.modeling}.{self.hf_name}"

    def load_liger(self):
        """Liger-Kernel's function and where it is."""
        errors = []
        for module, attr, adapt in self.liger_candidates:
            try:
                obj = getattr(importlib.import_module(module), attr)
                return (adapt(obj) if adapt else obj), f"{module}.{attr}"
            except Exception as e:
                errors.append(f"{module}.{attr}: {type(e).__name__}: {e}")
        raise ImportError("; ".join(errors))

    def layout(self, t):
        """q or k (1, seq, heads, head_dim) as the kernel's callers pass it."""
        return t.transpose(1, 2) if self.transposed else t


KERNELS = {
    "llama4_rope": Kernel(
        "llama4_rope", "transformers.models.llama4.modeling_llama4", "apply_rotary_emb",
        "Llama4TextRotaryEmbedding", "transformers.models.llama4.configuration_llama4.Llama4TextConfig",
        embed_input="q", transposed=False,
        # HF rounds an fp32 result to bf16 once; a peer may round differently by about one
        # bf16 ulp (2**-8 relative). Anything beyond atol + RTOL |ref| is a wrong kernel.
        atol=1e-2,
        liger=[("liger_kernel.transformers.llama4_rope", "liger_llama4_text_rotary_pos_emb", None),
               ("liger_kernel.ops.llama4_rope", "LigerLlama4RopeFunction",
                lambda F: lambda q, k, f: F.apply(q, k, f))]),
    "rope": Kernel(
        "rope", "transformers.models.llama.modeling_llama", "apply_rotary_pos_emb",
        "LlamaRotaryEmbedding", "transformers.models.llama.configuration_llama.LlamaConfig",
        embed_input="k", transposed=True,
        # HF eager rounds every bf16 op (q * cos, rotate_half(q) * sin, their sum), so where
        # the sum cancels, a peer that rounds otherwise differs by ulps of the terms (|q| up to
        # ~6: 2**-5 each), not of the result. 1e-1 is Liger's own bf16 tolerance for this
        # comparison (test/transformers/test_rope.py); a wrong sign or pairing errs by ~|q|.
        atol=1e-1,
        # older LigerRopeFunction.apply returned (q, k, cos, sin)
        liger=[("liger_kernel.transformers.rope", "liger_rotary_pos_emb", None),
               ("liger_kernel.ops.rope", "LigerRopeFunction",
                lambda F: lambda q, k, cos, sin: tuple(F.apply(q, k, cos, sin))[:2])]),
}


def rotary_embedding(kernel, hidden, seq, q_heads, kv_heads, theta, device):
    """Hugging Face's rotary embedding module for a point, built from the model's config as Liger's benchmark
    builds it; theta None keeps the config's default (500000 for Llama 4, 10000 for Llama)."""
    cfg = kernel.Config(hidden_size=hidden, num_attention_heads=q_heads, num_key_value_heads=kv_heads,
                        head_dim=hidden // q_heads, max_position_embeddings=seq)
    if theta is not None:
        rp = getattr(cfg, "rope_parameters", None)
        if isinstance(rp, dict):
            rp["rope_theta"] = theta  # transformers 5
        else:
            cfg.rope_theta = theta  # transformers 4
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*`device` is deprecated.*")  # transformers 5.17
        try:
            emb = kernel.Embedding(config=cfg, device=device)
        except TypeError:  # the device argument is gone in transformers 5.18
            emb = kernel.Embedding(config=cfg)
    return emb.to(device)


# --------------------------------------------------------------------------- the providers

# What each provider needs beside torch, as import name and the package that installs it.
NEEDS = {"huggingface": [("transformers", "transformers")],
         "liger": [("transformers", "transformers"), ("liger_kernel", "liger-kernel")],
         "torch_compile": [("transformers", "transformers")]}

_functions = {}  # (kernel, provider) -> (fn, symbol)


def _import_error(module, package, e):
    return (f"{package} is not installed for {sys.executable} ({type(e).__name__}: {e})"
            if isinstance(e, ImportError) else f"{module} cannot be imported: {type(e).__name__}: {e}")


def unavailable(kernel_name, provider):
    """None when the provider can run here, else one line saying why (naming the package that is missing)."""
    try:
        import torch
    except Exception as e:
        return _import_error("torch", "torch", e)
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False)"
    for module, package in NEEDS[provider]:
        try:
            importlib.import_module(module)
        except Exception as e:
            return _import_error(module, package, e)
    if provider == "torch_compile" and not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile (2.0 or later has)"
    try:
        function(kernel_name, provider)
    except Exception as e:
        return f"{provider} cannot give its {kernel_name} function: {type(e).__name__}: {e}"
    return None


def function(kernel_name, provider):
    """The provider's function of (q, k, *table) -> (q_out, k_out), and what it is (made once)."""
    key = (kernel_name, provider)
    if key not in _functions:
        kernel = KERNELS[kernel_name].load()
        if provider == "huggingface":
            _functions[key] = (kernel.hf, kernel.hf_where)
        elif provider == "liger":
            _functions[key] = kernel.load_liger()
        elif provider == "torch_compile":
            import torch
            dyn = torch._dynamo.config
            for knob in ("recompile_limit", "cache_size_limit"):  # one graph per shape of the sweep
                if hasattr(dyn, knob):
                    setattr(dyn, knob, max(64, getattr(dyn, knob)))
            _functions[key] = (torch.compile(kernel.hf, dynamic=False), f"torch.compile({kernel.hf_where}, dynamic=False)")
        else:
            raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PEERS)})")
    return _functions[key]


def describe(kernel_name, provider):
    """What records name as the provider's callable."""
    return function(kernel_name, provider)[1]


def packages(provider):
    """The packages whose versions records give for the provider."""
    extra = {"liger": ("liger_kernel", "triton"), "torch_compile": ("triton",)}.get(provider, ())
    return ("torch", "transformers") + extra


class State:
    """One input set of a provider: q, k, dq and dk (copies of kluabench's, in the layout the function takes),
    the table, and the forward's outputs, whose autograd graph the backward mode runs again and again."""

    def __init__(self, kernel_name, provider, q, k, dq, dk, theta):
        import torch
        kernel = KERNELS[kernel_name].load()
        self.fn = function(kernel_name, provider)[0]

        def copy(t, grad):
            x = torch.from_dlpack(t).clone()  # kluabench's tensor is lent for this call only
            return kernel.layout(x.requires_grad_() if grad else x)

        self.q, self.k, self.dq, self.dk = copy(q, True), copy(k, True), copy(dq, False), copy(dk, False)
        _, seq, q_heads, head_dim = q.shape
        emb = rotary_embedding(kernel, q_heads * head_dim, seq, q_heads, k.shape[2], theta, self.q.device)
        positions = torch.arange(seq, device=self.q.device, dtype=torch.long).unsqueeze(0)
        table = emb(self.q if kernel.embed_input == "q" else self.k, positions)
        self.table = tuple(table) if isinstance(table, (tuple, list)) else (table,)
        self.q_out, self.k_out = self.fn(self.q, self.k, *self.table)


def make(kernel_name, provider, q, k, dq, dk, theta):
    """A provider's state over kluabench's inputs (the setup hook keeps it as a kluabench.PyObject)."""
    return State(kernel_name, provider, q, k, dq, dk, theta)


def run_forward(s):
    s.fn(s.q, s.k, *s.table)


def run_backward(s):
    import torch
    torch.autograd.grad((s.q_out, s.k_out), (s.q, s.k), (s.dq, s.dk), allow_unused=True, retain_graph=True)


def run_full(s):
    import torch
    q_out, k_out = s.fn(s.q, s.k, *s.table)
    torch.autograd.grad((q_out, k_out), (s.q, s.k), (s.dq, s.dk), allow_unused=True)


def outputs(kernel_name, provider, q, k, dq, dk, theta):
    """The forward's q_out and k_out and the gradients for q and k given dq and dk, on fresh copies of the
    inputs, as kluabench's layout (1, seq, heads, head_dim) and contiguous: what the check compares."""
    import torch
    kernel = KERNELS[kernel_name]
    s = State(kernel_name, provider, q, k, dq, dk, theta)
    q_out, k_out = s.q_out, s.k_out
    grads = torch.autograd.grad((q_out, k_out), (s.q, s.k), (s.dq, s.dk), allow_unused=True)

    def back(t):
        return kernel.layout(t.detach()).clone(memory_format=torch.contiguous_format)

    return tuple(back(t) for t in (q_out, k_out) + tuple(grads))
