--- Kernels that Liger-Kernel benchmarks and kluabench imports
-- (`kluabench import-liger`) but does not build: titles only, no binding.
return {
  binding = false,
  kernels = {
    qwen2vl_mrope = { title = 'Qwen2-VL multimodal rotary position embedding' },
    rms_norm = { title = 'RMS normalization' },
    layer_norm = { title = 'Layer normalization' },
    group_norm = { title = 'Group normalization' },
    swiglu = { title = 'SwiGLU' },
    geglu = { title = 'GeGLU' },
    cross_entropy = { title = 'Cross entropy' },
    fused_linear_cross_entropy = { title = 'Fused linear cross entropy' },
    embedding = { title = 'Embedding' },
    kl_div = { title = 'KL divergence' },
    jsd = { title = 'Jensen-Shannon divergence' },
  },
}
