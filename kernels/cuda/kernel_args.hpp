// The arguments of every CUDA kernel of ours: plain structs of device pointers and sizes, passed
// by value to a launch (so trivially copyable), the same for the device and the simulated grid.
// Each struct's comment is the kernel's contract; the CPU kernel it must agree with is named there.
// Pointers are device pointers (host pointers under the simulation). Row strides are in elements.
#pragma once

#include <cstdint>

namespace bitnet::kernels::cuda {

/// kernels::rms_norm: y[r] = x[src(r)] / sqrt(mean(x²) + eps) * weight, for r < n_rows, where
/// src(r) = rows ? rows[r] : r (the logits gather only the rows they need).
struct rms_norm_args {
    const float* x = nullptr;
    std::uint32_t ldx = 0;
    const float* weight = nullptr;
    float* y = nullptr;
    std::uint32_t ldy = 0;
    std::uint32_t n_rows = 0;
    std::uint32_t n = 0;
    float eps = 0.0f;
    const std::int32_t* rows = nullptr;
};

/// kernels::quantize_activations: per row, absmax (in double, 1e-5 floor) → scale = 127 / max as
/// float, codes rounded half to even, clamped to [-128, 127]; the same bytes and scales.
struct quantize_args {
    const float* x = nullptr;
    std::uint32_t ldx = 0;
    std::uint32_t n_rows = 0;
    std::uint32_t k = 0;
    std::int8_t* q = nullptr; ///< [n_rows][ldq]
    std::uint32_t ldq = 0;
    float* scale = nullptr; ///< [n_rows]
};

/// kernels::ternary_matmul (scalar family) times out_multiplier: y[t][m] for t < n_rows, m < rows,
/// from the weights in the GPU layout (ternary_gpu_layout.hpp) and quantize_args' codes/scales.
/// Integer dot products are exact, so the result must equal the CPU's bit for bit. q and ldq must
/// be multiples of 16 bytes (the kernels read 16 codes at once); launch() checks ldq and cols.
/// Fused projections (Q/K/V, gate/up): several matrices of the same K stacked as one, each with
/// its own scale and multiplier from row seg_begin[i] on (a seg_begin of 0 is no segment).
/// accumulate: y += the product (the residual add fused into the projection: the same one float
/// addition the separate add kernel makes). Split-K (ternary_gemm.cuh): launch() may split K over
/// several blocks per tile when the tiles alone would leave the device idle; their exact int32
/// partial sums meet in split_sums (zero between launches; the last block of a tile reads them
/// back and leaves zeros), counted in split_counters (the same). split_tiles: the tiles they hold
/// (0: never split). ternary_split_workspace() says how much a caller allocates.
struct ternary_gemm_args {
    const std::uint8_t* w = nullptr; ///< GPU layout
    std::uint32_t rows = 0;          ///< M
    std::uint32_t cols = 0;          ///< K, a multiple of 128
    float w_scale = 0.0f;
    const std::int8_t* q = nullptr;
    std::uint32_t ldq = 0;
    const float* act_scale = nullptr;
    std::uint32_t n_rows = 0; ///< T (1 = the decode GEMV)
    float* y = nullptr;
    std::uint32_t ldy = 0;
    float out_multiplier = 1.0f;
    std::uint32_t seg_begin[2] = {0, 0};
    float seg_scale[2] = {0.0f, 0.0f};
    float seg_mult[2] = {1.0f, 1.0f};
    bool accumulate = false;
    std::int32_t* split_sums = nullptr;
    std::uint32_t* split_counters = nullptr;
    std::uint32_t split_tiles = 0;
    std::uint32_t splits = 1; ///< set by launch(), not by callers
};

/// kernels::f16_matmul: y[t][m] = Σ_k f16(x[t][k]) · w[m][k], in f16_matmul's summation order
/// (16 lanes of FMAs, folded by halves), so bit for bit. x rows are gathered
/// (x_rows ? x_rows[t] : t).
struct f16_gemm_args {
    const std::uint16_t* w = nullptr; ///< [rows][cols] F16 bits
    std::uint32_t rows = 0;
    std::uint32_t cols = 0;
    const float* x = nullptr;
    std::uint32_t ldx = 0;
    std::uint32_t n_rows = 0;
    float* y = nullptr;
    std::uint32_t ldy = 0;
    const std::int32_t* x_rows = nullptr; ///< the gather: x row of token t is x_rows[t] (or t)
};

/// kernels::rope_apply (NEOX or normal style): rotates, in place, heads of `n_heads` in every row
/// t < n_rows of x by the angles of position pos[t], read from a table computed on the host with
/// kernels::rope_angles_for (cos then sin, head_dim / 2 each per position).
struct rope_args {
    float* x = nullptr;
    std::uint32_t ldx = 0;
    std::uint32_t n_rows = 0;
    std::uint32_t n_heads = 0;
    std::uint32_t head_dim = 0;
    bool neox = true;
    const float* cos_sin = nullptr; ///< [n_positions][head_dim] : cos[head_dim/2], sin[head_dim/2]
    const std::int32_t* pos = nullptr;
};

/// The forward pass's KV write: row t's K and V (n_kv floats each) rounded to F16 (f32_to_f16)
/// into the pool at half offsets k_dst[t] and v_dst[t].
struct kv_append_args {
    const float* k = nullptr;
    const float* v = nullptr;
    std::uint32_t ld = 0;
    std::uint32_t n_rows = 0;
    std::uint32_t n_kv = 0;
    std::uint16_t* pool = nullptr;
    const std::uint64_t* k_dst = nullptr;
    const std::uint64_t* v_dst = nullptr;
};

/// kernels::attention_one_token for every query row t < n_rows: q row t attends over positions
/// [0, n_ctx[t]) of its sequence, whose K/V tiles start at half offsets k_tiles[table[t] + i] and
/// v_tiles[...] for block i (tile = [block_tokens][n_kv_head][head_dim] F16, as model::kv_cache).
/// round_probs[t] != 0: probabilities rounded to F16 (decode semantics). scratch: n_rows · n_head ·
/// max_ctx floats for the scores.
struct paged_attention_args {
    const float* q = nullptr;
    std::uint32_t ldq = 0;
    float* out = nullptr;
    std::uint32_t ldo = 0;
    std::uint32_t n_rows = 0;
    std::uint32_t n_head = 0;
    std::uint32_t n_kv_head = 0;
    std::uint32_t head_dim = 0;
    float scale = 0.0f;
    std::uint32_t block_tokens = 0;
    const std::uint16_t* pool = nullptr;
    const std::uint64_t* k_tiles = nullptr; ///< per (row, block): offsets, row t's from table[t]
    const std::uint64_t* v_tiles = nullptr;
    const std::uint32_t* table = nullptr;
    const std::uint32_t* n_ctx = nullptr;
    const std::uint8_t* round_probs = nullptr;
    float* scratch = nullptr;
    std::uint32_t max_ctx = 0;
    /// Set by launch(), not by callers: 0, or the position ranges the scores were computed in by
    /// the scores kernel that ran first (kv_attention.cuh: long contexts split over blocks).
    std::uint32_t score_splits = 0;
};

/// kernels::gated_activation with ReLU²: z[i] = relu(g[i])² · u[i], n elements (z may alias g).
struct relu_sqr_gate_args {
    const float* g = nullptr;
    const float* u = nullptr;
    float* z = nullptr;
    std::uint64_t n = 0;
};

/// The residual: x[i] += d[i], n elements.
struct add_args {
    float* x = nullptr;
    const float* d = nullptr;
    std::uint64_t n = 0;
};

/// RMSNorm fused with the int8 quantization that follows it everywhere in the forward pass (the
/// norm of rms_norm_args, then quantize_args, in one launch with the same bytes and scales): per
/// row r < n_rows, the input v[i] = x[r][i], or in gate mode (u set) relu(x[r][i])² · u[r][i]
/// (relu_sqr_gate_args' value, so gate, sub-norm and quantization are one launch); normed by
/// `weight` when it is set (else quantized as it is); codes into q[r], scale into scale[r].
struct norm_quantize_args {
    const float* x = nullptr;
    std::uint32_t ldx = 0;
    const float* u = nullptr;
    std::uint32_t ldu = 0;
    const float* weight = nullptr;
    float eps = 0.0f;
    std::uint32_t n_rows = 0;
    std::uint32_t n = 0;
    std::int8_t* q = nullptr;
    std::uint32_t ldq = 0;
    float* scale = nullptr;
};

/// rope_args on q and k, then kv_append_args, in one launch (the same bits): per row r < n_rows,
/// q's n_head heads rotated in place by the angles of pos[r]; k's n_kv_head heads rotated and
/// rounded to F16 into the pool at k_dst[r] (k itself is left as it was), v rounded into v_dst[r].
/// q, k and v are column offsets into the rows of one fused Q/K/V projection (stride ld).
struct rope_kv_args {
    float* q = nullptr;
    const float* k = nullptr;
    const float* v = nullptr;
    std::uint32_t ld = 0;
    std::uint32_t n_rows = 0;
    std::uint32_t n_head = 0;
    std::uint32_t n_kv_head = 0;
    std::uint32_t head_dim = 0;
    bool neox = true;
    const float* cos_sin = nullptr;
    const std::int32_t* pos = nullptr;
    std::uint16_t* pool = nullptr;
    const std::uint64_t* k_dst = nullptr;
    const std::uint64_t* v_dst = nullptr;
};

/// The token embedding's rows on the device: x[r][k] = f16_to_f32(table[tokens[r]][k]) (the
/// CPU's embedding_row of an F16 table: exact), for r < n_rows, k < n_embd.
struct embed_args {
    const std::uint16_t* table = nullptr;
    std::uint32_t n_embd = 0;
    const std::int32_t* tokens = nullptr;
    std::uint32_t n_rows = 0;
    float* x = nullptr;
    std::uint32_t ldx = 0;
};

/// One row's sampling on the device (sample.cuh): model::sampling_params' chain with the CPU
/// sampler's semantics and order (repetition penalty, top-k, top-p, min-p, temperature, one draw),
/// preceded by what the CPU sampler does not have: a logit bias, then OpenAI's presence and
/// frequency penalties after the repetition penalty (logit -= presence · (count > 0) +
/// frequency · count). `uniform` is the row's draw in [0, 1), taken on the host from the
/// sequence's own RNG (model::sampler::take_uniform), so seeded sampling continues the same
/// stream whichever side samples. The tokens a penalty or bias touches are entries
/// [adjust_begin, adjust_end) of sample_args::adjust.
struct sample_row_params {
    float temperature = 0.0f; ///< 0: greedy
    std::int32_t top_k = 0;
    float top_p = 1.0f;
    float min_p = 0.0f;
    float repetition_penalty = 1.0f;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    double uniform = 0.0;
    std::uint32_t adjust_begin = 0;
    std::uint32_t adjust_end = 0;
    /// 0: the logprob is not delivered (model::sampling_params::report_logprob), so its sum over
    /// the vocabulary is skipped and sample_result::logprob is 0.
    std::uint32_t want_logprob = 1;
};
/// A distinct token of a row's penalties and bias.
struct sample_adjust {
    std::int32_t token = 0;
    std::uint32_t count = 0;     ///< occurrences, for the presence and frequency penalties
    std::uint32_t in_window = 0; ///< 1: in the repetition penalty's window (repeat_last_n)
    float bias = 0.0f;           ///< added to the logit before any penalty
};
/// What the device sampled for a row: the token, its logprob (the log-softmax of the penalised,
/// temperature-free row, as model::sampler reports it), and a status: 0 ok; 1 a NaN logit (the
/// lowest such id in `detail`); 2 the row's maximum is not finite.
struct sample_result {
    std::int32_t token = 0;
    float logprob = 0.0f;
    std::int32_t status = 0;
    std::int32_t detail = 0;
};
/// Samples n_rows rows: row i from logits row logits_row[i] (or i), with params[i]. work (floats)
/// and keys (the sort's, n_pow2 = the next power of two ≥ n_vocab) are [n_rows] scratch rows.
struct sample_args {
    const float* logits = nullptr;
    std::uint32_t ldl = 0;
    std::uint32_t n_vocab = 0;
    std::uint32_t n_rows = 0;
    const std::int32_t* logits_row = nullptr;
    const sample_row_params* params = nullptr;
    const sample_adjust* adjust = nullptr;
    float* work = nullptr;
    std::uint64_t* keys = nullptr;
    std::uint32_t n_pow2 = 0;
    sample_result* out = nullptr;
};

/// Every kernel, for the launch tables of the device and of the simulation (ops.hpp).
#define BITNET_CUDA_KERNELS(X)                                                                     \
    X(rms_norm)                                                                                    \
    X(quantize)                                                                                    \
    X(ternary_gemm)                                                                                \
    X(f16_gemm)                                                                                    \
    X(rope)                                                                                        \
    X(kv_append)                                                                                   \
    X(paged_attention)                                                                             \
    X(relu_sqr_gate)                                                                               \
    X(add)                                                                                         \
    X(norm_quantize)                                                                               \
    X(rope_kv)                                                                                     \
    X(embed)                                                                                       \
    X(sample)

} // namespace bitnet::kernels::cuda
