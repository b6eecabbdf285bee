// Causal attention on tensor cores for the bf16 mode (FlashAttention-2 style): the same interface,
// layouts and results as kernels.h's AttentionForward / AttentionInputGrad (fused QKV rows,
// grouped-query heads, scale 1/sqrt(head_dim), lse per (sequence, head, query row), fp32 out and
// dqkv), but the fp32 inputs are rounded to bf16 while tiles are loaded into shared memory and the
// products run on tensor cores (WMMA, fp32 accumulation). The algorithm is
// flash_attention_math.h's, which tests run on the host.
//
// Forward: a block per (query tile, head, sequence) walks the key tiles up to the diagonal with an
// online softmax. Backward: delta = rowsum(dout * out), then a block per (query tile, head,
// sequence) for dq and a block per (key tile, kv head, sequence) for dk and dv, each recomputing
// the probabilities from lse; no atomics, so the same input gives the same bits.
//
// head_dim 64 and 128 run these kernels; any other head_dim, or a device with too little shared
// memory per block, runs the exact kernels of kernels.h instead. Launchers return at once (work
// queued on `stream`) and throw std::runtime_error on a failed launch.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/kernels.h"

namespace pipette::cuda::kernels {

// True when the tensor-core kernels run `shape` (head_dim 64 or 128; kv_heads divides heads).
bool FlashAttentionSupports(const AttentionShape& shape);

// As AttentionForward (kernels.h), bf16 operands, fp32 accumulation and softmax.
void FlashAttentionForward(const float* qkv, const AttentionShape& shape, float* out, float* lse,
                           cudaStream_t stream);
// As AttentionInputGrad (kernels.h): dqkv overwritten; `delta` is workspace of batch*heads*seq.
void FlashAttentionInputGrad(const float* dout, const float* qkv, const float* out,
                             const float* lse, const AttentionShape& shape, float* dqkv,
                             float* delta, cudaStream_t stream);

}  // namespace pipette::cuda::kernels
