// load_cuda_engine: the file read and checked as engine::load does (load_model_parts, with the
// scalar family, whose layout is I2_S itself), then everything the step reads put on the device
// once: projections repacked to the GPU layout, norms, the F16 logits matrix, the RoPE table, the
// KV pool and the activation buffers of max_batch_tokens tokens. Nothing is allocated per step.
#include "kernels/cuda/sample.cuh"
#include "kernels/cuda/ternary_gemm.cuh"
#include "kernels/cuda/ternary_gpu_layout.hpp"
#include "kernels/rope.hpp"
#include "model/engine/cuda/cuda_engine.hpp"
#include "model/engine/cuda/cuda_engine_sampling.hpp"
#include "model/engine/model_parts.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <type_traits>

namespace bitnet::model {
namespace {

namespace cuda = kernels::cuda;

const std::string unsupported_prefix = "format unsupported on CUDA: ";

/// Device allocations are rounded up to 256 bytes (cudaMalloc's alignment), so the estimate is.
std::uint64_t rounded(std::uint64_t bytes) {
    return (bytes + 255) / 256 * 256;
}

struct named_projection {
    const char* name;
    projection layer_weights::*member;
    const gguf_tensor* layer_tensors::*tensor;
};
constexpr std::array<named_projection, 7> projections{
    {{"attn_q", &layer_weights::wq, &layer_tensors::wq},
     {"attn_k", &layer_weights::wk, &layer_tensors::wk},
     {"attn_v", &layer_weights::wv, &layer_tensors::wv},
     {"attn_output", &layer_weights::wo, &layer_tensors::wo},
     {"ffn_gate", &layer_weights::w_gate, &layer_tensors::w_gate},
     {"ffn_up", &layer_weights::w_up, &layer_tensors::w_up},
     {"ffn_down", &layer_weights::w_down, &layer_tensors::w_down}}};

/// What the CUDA engine has no kernels for, every reason at once, before the weights are read:
/// a SiLU feed-forward (only ReLU² is written) and TL1/TL2 projections (the engine is written and
/// checked for I2_S files and their F32/F16 twins, which hold the same ternary values exactly).
result<void> check_cuda_support(const model_config& c, const model_tensors& t) {
    std::string why;
    auto add = [&](const std::string& reason) { why += (why.empty() ? "" : "; ") + reason; };
    if (c.activation != ffn_activation::relu_sqr)
        add(c.arch_name + " has a SiLU feed-forward; the CUDA engine has the ReLU² one only "
                          "(bitnet-b1.58, bitnet-25)");
    // The first TL1/TL2 projection names the format (files are all one format or all another).
    const gguf_tensor* tl = nullptr;
    std::string tl_name;
    for (std::size_t l = 0; l < t.layers.size() && tl == nullptr; ++l)
        for (const named_projection& p : projections) {
            const gguf_tensor* tensor = t.layers[l].*p.tensor;
            if (tensor != nullptr &&
                (tensor->type == ggml_type::tl1 || tensor->type == ggml_type::tl2)) {
                tl = tensor;
                tl_name = "blk." + std::to_string(l) + "." + p.name + ".weight";
                break;
            }
        }
    if (tl != nullptr)
        add(tl_name + " is " + std::string(ggml_type_name(tl->type)) +
            "; the CUDA engine runs I2_S projections (the CPU engine runs TL1/TL2)");
    if (!why.empty())
        return error(errc::unsupported, unsupported_prefix + why);
    return {};
}

/// Q/K/V, the output projection, gate/up and down: the four products a layer runs, each one
/// matrix on the device (the first and third stacked from several of the file's).
std::array<std::vector<const projection*>, 4> stacked_projections(const layer_weights& L) {
    return {{{&L.wq, &L.wk, &L.wv}, {&L.wo}, {&L.w_gate, &L.w_up}, {&L.w_down}}};
}

std::uint64_t weight_device_bytes(const model_weights& w, const model_config& c) {
    std::uint64_t n = rounded(w.output_norm.size() * sizeof(float)) +
                      rounded(std::uint64_t{c.n_vocab} * c.n_embd * 2);
    for (const layer_weights& L : w.layers) {
        for (const auto* v : {&L.attn_norm, &L.attn_sub_norm, &L.ffn_norm, &L.ffn_sub_norm})
            n += rounded(v->size() * sizeof(float));
        for (const auto& group : stacked_projections(L)) {
            std::uint64_t bytes = 0;
            for (const projection* p : group)
                bytes += cuda::ternary_gpu_bytes(p->w.rows, p->w.cols);
            n += rounded(bytes);
        }
    }
    return n;
}

/// Whether the token embedding is the tied F16 logits matrix, whose rows the device can gather
/// (embed.cuh) from the copy it holds for the logits: then the host keeps no embedding.
bool embedding_on_device(const model_weights& w) {
    return w.token_embd.type == ggml_type::f16 && w.logits_f16 != nullptr &&
           reinterpret_cast<const std::uint8_t*>(w.logits_f16) == w.token_embd.data.data();
}

} // namespace

cuda_engine::cuda_engine(std::unique_ptr<kernels::cuda::ops> device, model_config config,
                         tokenizer vocab, kv_cache cache, const engine_options& opt)
    : paged_kv_engine(std::move(cache))
    , ops_(std::move(device))
    , config_(std::move(config))
    , vocab_(std::move(vocab))
    , opt_(opt) {}

device_memory cuda_engine::alloc(std::size_t bytes) {
    device_bytes_ += rounded(bytes);
    return device_memory(*ops_, bytes);
}

template <class T>
device_memory cuda_engine::upload_vector(const std::vector<T>& v) {
    if (v.empty())
        return {};
    device_memory m = alloc(v.size() * sizeof(T));
    ops_->upload(m.as<void>(), v.data(), v.size() * sizeof(T));
    return m;
}

// One matrix of the GPU layout from `parts` (the same K) stacked in order, each part's rows with
// its own scale and multiplier (device_projection's segments).
cuda_engine::device_projection
cuda_engine::upload_stacked(std::initializer_list<const projection*> parts) {
    if (parts.size() == 0 || parts.size() > 3)
        throw std::logic_error("a stacked projection has one to three parts");
    device_projection d;
    d.cols = (*parts.begin())->w.cols;
    std::vector<std::uint8_t> gpu;
    std::size_t i = 0;
    for (const projection* p : parts) {
        if (p->w.cols != d.cols)
            throw std::logic_error("stacked projections must share K");
        if (i == 0) {
            d.scale = p->w.scale;
            d.out_multiplier = p->out_multiplier;
        } else {
            d.seg_begin[i - 1] = d.rows;
            d.seg_scale[i - 1] = p->w.scale;
            d.seg_mult[i - 1] = p->out_multiplier;
        }
        // The scalar family's packed bytes are I2_S as the file stores them (pack_ternary).
        const auto part = cuda::pack_ternary_gpu(p->w.data.data(), p->w.rows, d.cols);
        gpu.insert(gpu.end(), part.begin(), part.end());
        d.rows += p->w.rows;
        ++i;
    }
    d.w = alloc(gpu.size());
    ops_->upload(d.w.as<void>(), gpu.data(), gpu.size());
    ops_->finish(); // `gpu` must outlive the copy
    projection_bytes_ += gpu.size();
    return d;
}

// Uploads the weights and frees the host copies of what went up; the token embedding stays (its
// rows are looked up on the host).
void cuda_engine::upload_weights(model_weights& w) {
    const std::uint64_t before = device_bytes_;
    formats_ = w.formats;
    output_norm_ = upload_vector(w.output_norm);
    const std::uint64_t logits_n = std::uint64_t{config_.n_vocab} * config_.n_embd;
    logits_w_ = alloc(logits_n * 2);
    ops_->upload(logits_w_.as<void>(), w.logits_f16, logits_n * 2);
    logits_bytes_ = logits_n * 2;
    layers_.resize(w.layers.size());
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        layer_weights& L = w.layers[l];
        device_layer& D = layers_[l];
        D.attn_norm = upload_vector(L.attn_norm);
        D.attn_sub_norm = upload_vector(L.attn_sub_norm);
        D.ffn_norm = upload_vector(L.ffn_norm);
        D.ffn_sub_norm = upload_vector(L.ffn_sub_norm);
        D.qkv = upload_stacked({&L.wq, &L.wk, &L.wv});
        D.wo = upload_stacked({&L.wo});
        D.gate_up = upload_stacked({&L.w_gate, &L.w_up});
        D.down = upload_stacked({&L.w_down});
        ops_->finish();      // the norms' host vectors are read until here
        L = layer_weights{}; // on the device now
    }
    device_weight_bytes_ = device_bytes_ - before;

    // The RoPE angles of every position a sequence can reach (rope_positions_: the model's
    // context, and no more than the KV pool holds), by the CPU's float32 rule (rope_angles_for).
    const std::uint32_t hd = config_.head_dim;
    std::vector<float> table(std::size_t{rope_positions_} * hd);
    kernels::rope_angles a;
    for (std::uint32_t p = 0; p < rope_positions_; ++p) {
        kernels::rope_angles_for(p, hd, config_.rope_base,
                                 w.rope_freqs.empty() ? nullptr : w.rope_freqs.data(), a);
        std::copy(a.cos.begin(), a.cos.end(), table.begin() + std::size_t{p} * hd);
        std::copy(a.sin.begin(), a.sin.end(), table.begin() + std::size_t{p} * hd + hd / 2);
    }
    rope_table_ = upload_vector(table);
    ops_->finish();

    // What the host keeps: the embedding when the device cannot gather it; whatever else the
    // weights held is on the device.
    w.output_norm = {};
    w.rope_freqs = {};
    std::vector<layer_weights>().swap(w.layers);
    if (device_embedding_)
        w.token_embd.data = kernels::aligned_buffer{};
    w.owned_bytes = w.token_embd.data.size();
    w.projection_bytes = 0;
    w.logits_bytes = 0;
    if (w.logits_owned.size() > 0) // a logits matrix apart from the embedding: on the device
        w.logits_owned = kernels::aligned_buffer{};
    w.logits_f16 = nullptr;
    host_weights_ = std::move(w);
}

// Rows per logits launch, rows × context of the attention scratch, rows per sampler launch and
// the largest recorded bucket, from the caps (every row of a step where that fits).
void cuda_engine::size_step_buffers(const cuda_buffer_caps& caps) {
    const model_config& c = config_;
    const std::uint64_t T = opt_.max_batch_tokens;
    const std::uint64_t bt = cache_.block_tokens();
    // Rows share their chunk's block list, so a step lists at most one table per chunk (at most
    // T chunks), each of at most the blocks of the longest sequence; and the trash tile.
    tiles_capacity_ = static_cast<std::uint32_t>(T * ((rope_positions_ + bt - 1) / bt) + 1);
    logits_rows_max_ = static_cast<std::uint32_t>(
        std::clamp<std::uint64_t>(caps.logits_bytes / (std::uint64_t{c.n_vocab} * 4), 1, T));
    scratch_row_ctx_ = std::max<std::uint64_t>(
        rope_positions_,
        std::min<std::uint64_t>(T * rope_positions_,
                                caps.attention_scratch_bytes / (std::uint64_t{c.n_head} * 4)));
    sort_keys_ = cuda::sample_sort_size(c.n_vocab);
    sample_rows_max_ = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
        caps.sampling_bytes / (std::uint64_t{c.n_vocab} * 4 + std::uint64_t{sort_keys_} * 8), 1,
        logits_rows_max_));
    adjust_capacity_ = static_cast<std::uint32_t>(T) * max_adjusted_tokens;
    recorded_rows_ = 0;
    for (std::uint32_t b = 1; b <= std::min<std::uint64_t>(caps.recorded_rows, T); b <<= 1)
        recorded_rows_ = b;
}

// Every per-step buffer, sized for max_batch_tokens rows. `dry` only adds up the device bytes
// (the load's memory check), so that the check and the allocation cannot disagree.
std::uint64_t cuda_engine::plan_buffers(const cuda_buffer_caps& caps, bool dry) {
    const model_config& c = config_;
    const std::uint64_t T = opt_.max_batch_tokens;
    const std::uint64_t n_wide = std::max({c.n_embd, c.n_embd_q(), c.n_ff});
    size_step_buffers(caps);
    std::uint64_t total = 0;
    auto take = [&](device_memory& m, std::uint64_t bytes) {
        total += rounded(bytes);
        if (!dry)
            m = alloc(bytes);
    };
    auto pin = [&](pinned_memory& m, std::uint64_t bytes) {
        if (!dry)
            m = pinned_memory(*ops_, bytes);
    };
    auto both = [&](auto& s, std::uint64_t n) {
        using T_elem = std::remove_pointer_t<decltype(s.h())>;
        take(s.dev, n * sizeof(T_elem));
        pin(s.host, n * sizeof(T_elem));
    };
    // The pool, and one block past it: the padding rows' trash block.
    take(kv_pool_, cache_.pool_bytes() + kv_cache::block_bytes(cache_.options()));
    take(x_, T * c.n_embd * 4);
    take(qkv_, T * (c.n_embd_q() + 2 * std::uint64_t{c.n_embd_kv()}) * 4);
    take(attn_, T * c.n_embd_q() * 4);
    take(gate_up_, T * std::max<std::uint64_t>(2 * std::uint64_t{c.n_ff}, c.n_embd) * 4);
    take(acts_q_, T * n_wide);
    take(acts_scale_, T * 4);
    using tiled = cuda::ternary_gemm_tiled_kernel;
    take(split_sums_, std::uint64_t{tiled::fill_blocks} * tiled::tile_outputs * 4);
    take(split_counters_, std::uint64_t{tiled::fill_blocks} * 4);
    take(scratch_, scratch_row_ctx_ * c.n_head * 4);
    take(logits_, std::uint64_t{logits_rows_max_} * c.n_vocab * 4);
    take(sample_work_, std::uint64_t{sample_rows_max_} * c.n_vocab * 4);
    take(sample_keys_, std::uint64_t{sample_rows_max_} * sort_keys_ * 8);
    if (!device_embedding_)
        pin(embd_host_, T * c.n_embd * 4);
    pin(logits_host_, std::uint64_t{logits_rows_max_} * c.n_vocab * 4);
    both(tokens_, T);
    both(pos_, T);
    both(rows_, T);
    both(sample_rows_, T);
    both(k_dst_, T);
    both(v_dst_, T);
    both(table_, T);
    both(n_ctx_, T);
    both(round_, T);
    both(k_tiles_, tiles_capacity_);
    both(v_tiles_, tiles_capacity_);
    both(sample_params_, T);
    both(sample_adjust_, adjust_capacity_);
    both(sample_out_, T);
    if (!dry) { // the split-K workspace starts zeroed (each product leaves it so)
        const std::vector<std::uint8_t> zeros(split_sums_.bytes(), 0);
        ops_->upload(split_sums_.as<void>(), zeros.data(), split_sums_.bytes());
        ops_->upload(split_counters_.as<void>(), zeros.data(), split_counters_.bytes());
        ops_->finish();
    }
    return total;
}

result<std::unique_ptr<engine>> load_cuda_engine(const engine_options& opt,
                                                 std::unique_ptr<kernels::cuda::ops> device,
                                                 const cuda_buffer_caps& caps) {
    if (opt.q8_logits)
        return error(errc::unsupported,
                     unsupported_prefix +
                         "Q8_0 logits (q8_logits) have no CUDA kernel; the CUDA engine computes "
                         "F16 logits");
    if (opt.kv_q8_0)
        return error(errc::unsupported,
                     unsupported_prefix +
                         "a Q8_0 KV cache (kv_cache_type q8_0) has no CUDA kernel; the CUDA "
                         "engine keeps its KV cache in F16");
    auto parts = load_model_parts(opt, kernels::isa::scalar, check_cuda_support);
    if (!parts)
        return parts.error();
    kv_cache_options kv = kv_options_for(parts->config, opt);
    kv.device_pool = true;
    auto cache = kv_cache::create(kv);
    if (!cache)
        return cache.error();

    const std::string where = device->describe();
    std::unique_ptr<cuda_engine> e(new cuda_engine(std::move(device), std::move(parts->config),
                                                   std::move(parts->vocab), std::move(*cache),
                                                   opt));
    std::uint64_t need = 0;
    std::uint64_t free = 0;
    try {
        e->rope_positions_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(
            e->config_.n_ctx_train,
            std::uint64_t{e->cache_.n_blocks_total()} * e->cache_.block_tokens()));
        e->device_embedding_ = caps.gather_embeddings && embedding_on_device(parts->weights);
        e->trash_block_ = e->cache_.n_blocks_total();
        need = weight_device_bytes(parts->weights, e->config_) +
               rounded(std::uint64_t{e->rope_positions_} * e->config_.head_dim * 4) +
               e->plan_buffers(caps, true);
        free = e->ops_->free_bytes();
        if (need > free)
            return error(errc::unsupported, "out of memory on " + where + ": needs " +
                                                std::to_string(need) + " bytes, " +
                                                std::to_string(free) + " free");
        e->upload_weights(parts->weights);
        (void)e->plan_buffers(caps, false);
        e->ops_->finish();
    } catch (const cuda::device_error& err) {
        if (err.kind() == cuda::device_failure::out_of_memory)
            return error(errc::unsupported,
                         "out of memory on " + where + ": needs " + std::to_string(need) +
                             " bytes, " + std::to_string(free) + " free (" + err.what() + ")");
        return error(errc::unsupported,
                     where + ": " + cuda::failure_name(err.kind()) + ": " + err.what());
    }
    return std::unique_ptr<engine>(std::move(e));
}

} // namespace bitnet::model
