// cuda_engine's step: the batch validated and appended as the CPU engine does, the step's tables
// written into their fixed device buffers, the launch plan run (or a recorded one replayed), and
// the sampled tokens and the logits rows asked for brought back (cuda_engine.hpp).
#include "model/engine/cuda/cuda_engine.hpp"

#include "model/engine/cuda/cuda_engine_sampling.hpp"
#include "model/engine/step_bookkeeping.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace bitnet::model {

namespace cuda = kernels::cuda;

namespace {

std::uint32_t pow2_at_least(std::uint32_t n) {
    std::uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/// A recorded plan's context bound: the longest context rounded up to a power of two (64 at
/// least), but never past what the RoPE table (and so the KV pool) can hold.
std::uint32_t context_bucket(std::uint32_t max_ctx, std::uint32_t positions) {
    return std::min(pow2_at_least(std::max<std::uint32_t>(max_ctx, 64)), positions);
}

} // namespace

std::string cuda_engine::describe() const {
    std::ostringstream s;
    s << ops_->describe() << ": " << config_.arch_name << ", " << config_.n_layer
      << " layers, n_embd " << config_.n_embd << ", vocab " << config_.n_vocab << "; weights "
      << formats_
      << " repacked at load into the GPU ternary layout (2 bits a weight, 16 columns a 32-bit "
         "word, dp4a-ready; Q/K/V and gate/up stacked); logits F16 on the device; KV "
      << cache_.n_blocks_total() << " blocks of " << cache_.block_tokens()
      << " tokens (F16, on the device); " << device_bytes_ << " bytes of device memory; ";
    if (device_embedding_)
        s << "token embeddings gathered on the device from the tied F16 logits matrix; ";
    else
        s << "the host keeps the token embedding for lookups (" << host_weights_.owned_bytes
          << " bytes); ";
    s << "decode steps of up to " << recorded_rows_ << " sequences replayed as recorded plans; ";
    if (ops_->simulated())
        s << "kernels run and checked against the CPU kernels on the simulated grid (host)";
    else
        s << "kernels checked against the CPU kernels on the simulated grid (host); on this "
             "device by `ctest -L gpu` where that suite was run";
    return s.str();
}

result<step_output> cuda_engine::step(std::span<const seq_chunk> batch) {
    return run_step(batch, {});
}

result<step_output> cuda_engine::step_sampled(std::span<const seq_chunk> batch,
                                              std::span<const device_sample> samples) {
    std::vector<bool> taken(batch.size(), false);
    for (const device_sample& s : samples) {
        if (s.chunk >= batch.size() || !batch[s.chunk].want_logits || taken[s.chunk])
            return error(errc::invalid_argument,
                         "device sampling: sample for chunk " + std::to_string(s.chunk) +
                             " names no chunk of the step that wants logits, or one twice");
        taken[s.chunk] = true;
        if (s.params.n_logprobs != 0)
            return error(errc::invalid_argument,
                         "device sampling: alternatives (n_logprobs) are sampled on the host");
        BITNET_TRY(validate(s.params));
        if (adjusted_tokens_bound(s) > max_adjusted_tokens)
            return error(errc::invalid_argument, "device sampling: more than " +
                                                     std::to_string(max_adjusted_tokens) +
                                                     " penalised or biased tokens in one row");
    }
    return run_step(batch, samples);
}

result<step_output> cuda_engine::run_step(std::span<const seq_chunk> batch,
                                          std::span<const device_sample> samples) {
    if (batch.empty())
        return step_output{};
    BITNET_TRY(validate_step(batch, config_, cache_, opt_.max_batch_tokens));
    // A device's own failure (a failed launch, a lost device) is not this step's error alone: a
    // CUDA context is unusable after one, so every later step would fail too. The step is rolled
    // back like any failed step, then the failure goes on to the caller, whose executor ends as a
    // crash does, so the supervisor moves the version to its next placement (the CPU last).
    std::optional<cuda::device_error> fault;
    auto out = append_and_run(
        cache_, batch,
        [&] {
            try {
                return forward(batch, samples);
            } catch (const cuda::device_error& e) {
                fault = e;
                throw;
            }
        },
        [&] { settle_after_failure(); });
    if (fault)
        throw *fault;
    return out;
}

// The copy-on-write copies the cache recorded while appending, before anything of the step
// writes into their destination blocks (the stream keeps them in order).
void cuda_engine::copy_pending_blocks() {
    auto* pool = kv_pool_.as<std::uint16_t>();
    const std::uint64_t bytes = kv_cache::block_bytes(cache_.options());
    for (const kv_block_copy& c : cache_.take_pending_copies())
        ops_->copy(pool + cache_.k_tile_offset(c.dst, 0), pool + cache_.k_tile_offset(c.src, 0),
                   bytes);
}

// A failed step's sequences keep the private copies append() made of shared blocks (truncate
// drops only the step's rows), so the copies must reach the device even then. A device that
// fails this too has failed the step already: nothing more to report.
void cuda_engine::settle_after_failure() noexcept {
    try {
        copy_pending_blocks();
        ops_->finish();
    } catch (const std::exception&) {
    }
}

// Every row's token (or embedding, looked up on the host), position, KV destination, block list,
// context and decode semantics, in the pinned staging arrays. Returns the rows.
std::uint32_t cuda_engine::fill_rows(std::span<const seq_chunk> batch, std::uint32_t& n_tiles) {
    const std::uint32_t n_embd = config_.n_embd;
    auto* embd = embd_host_.as<float>();
    std::uint32_t t = 0;
    for (const seq_chunk& c : batch) {
        // Every row of a chunk reads its sequence's one block list (after this step's append).
        const auto blocks = cache_.block_table(c.seq);
        if (n_tiles + blocks.size() + 1 > tiles_capacity_) // + 1: the padding rows' trash tile
            throw std::logic_error("the step's block tables exceed their buffer");
        const std::uint32_t first = n_tiles;
        for (kv_cache::block_id b : blocks) {
            k_tiles_.h()[n_tiles] = cache_.k_tile_offset(b, 0);
            v_tiles_.h()[n_tiles] = cache_.v_tile_offset(b, 0);
            ++n_tiles;
        }
        for (std::uint32_t j = 0; j < c.tokens.size(); ++j, ++t) {
            const std::uint32_t pos = c.pos0 + j;
            if (device_embedding_)
                tokens_.h()[t] = c.tokens[j];
            else
                embedding_row(host_weights_, n_embd, c.tokens[j], embd + std::size_t{t} * n_embd);
            pos_.h()[t] = static_cast<std::int32_t>(pos);
            k_dst_.h()[t] = cache_.k_row_offset(c.seq, 0, pos);
            v_dst_.h()[t] = cache_.v_row_offset(c.seq, 0, pos);
            table_.h()[t] = first;
            n_ctx_.h()[t] = pos + 1;
            // bitnet.cpp rounds attention probabilities to F16 only in single-token steps
            // (docs/GGUF-FORMAT.md §3.6);
            // per chunk and position as the CPU engine decides (seq_chunk::decodes).
            round_.h()[t] = c.decodes(pos) ? 1 : 0;
        }
    }
    return t;
}

// Rows [from, to) of a recorded plan's bucket that the step does not fill: token 0 at position
// 0, its K/V into the trash block (never a sequence's), attending to that one position.
void cuda_engine::pad_rows(std::uint32_t from, std::uint32_t to, std::uint32_t trash_tile) {
    const std::uint32_t n_embd = config_.n_embd;
    for (std::uint32_t t = from; t < to; ++t) {
        if (device_embedding_)
            tokens_.h()[t] = 0;
        else
            std::fill_n(embd_host_.as<float>() + std::size_t{t} * n_embd, n_embd, 0.0f);
        pos_.h()[t] = 0;
        k_dst_.h()[t] = cache_.k_tile_offset(trash_block_, 0);
        v_dst_.h()[t] = cache_.v_tile_offset(trash_block_, 0);
        table_.h()[t] = trash_tile;
        n_ctx_.h()[t] = 1;
        round_.h()[t] = 1;
    }
}

// Attention launches whose rows × context fit the scores' scratch (one row always fits).
void cuda_engine::plan_attention_groups(const step_layout& L) {
    groups_.clear();
    for (std::uint32_t r = 0; r < L.T; ++r) {
        const std::uint32_t ctx = n_ctx_.h()[r];
        if (!groups_.empty()) {
            attention_group& g = groups_.back();
            const std::uint32_t m = std::max(g.max_ctx, ctx);
            if (std::uint64_t{g.end - g.begin + 1} * m <= scratch_row_ctx_) {
                g.end = r + 1;
                g.max_ctx = m;
                continue;
            }
        }
        groups_.push_back({r, r + 1, ctx});
    }
}

// The sampler's rows in slot order (the order of their logits rows): settings, adjustments and
// the row each reads within its logits launch. A recorded plan samples every row of its bucket;
// the rows no sample asked for draw greedily and are not read.
void cuda_engine::fill_samples(std::span<const device_sample> samples, const step_layout& L) {
    std::vector<std::int32_t> request_of_slot;
    for (std::size_t r = 0; r < L.sample_of_row.size(); ++r)
        if (L.sample_of_row[r] >= 0) {
            request_of_slot.resize(static_cast<std::size_t>(L.sample_of_row[r]) + 1, -1);
            sample_rows_.h()[L.sample_of_row[r]] = static_cast<std::int32_t>(r % logits_rows_max_);
        }
    for (std::size_t i = 0; i < samples.size(); ++i)
        request_of_slot[L.slot_of_sample[i]] = static_cast<std::int32_t>(i);
    std::vector<cuda::sample_adjust> adjust;
    for (std::size_t slot = 0; slot < request_of_slot.size(); ++slot) {
        const std::int32_t i = request_of_slot[slot];
        sample_params_.h()[slot] =
            i < 0
                ? greedy_sample_row(static_cast<std::uint32_t>(adjust.size()))
                : device_sample_row(samples[static_cast<std::size_t>(i)], config_.n_vocab, adjust);
    }
    if (adjust.size() > adjust_capacity_)
        throw std::logic_error("the step's sampling adjustments exceed their buffer");
    std::copy(adjust.begin(), adjust.end(), sample_adjust_.h());
    sample_slots_ = static_cast<std::uint32_t>(request_of_slot.size());
    adjust_entries_ = static_cast<std::uint32_t>(adjust.size());
}

// Which rows the step computes, whether it replays a recorded plan, which logits rows go to the
// host and which are sampled on the device; the host tables filled to match.
cuda_engine::step_layout cuda_engine::prepare_step(std::span<const seq_chunk> batch,
                                                   std::span<const device_sample> samples,
                                                   const std::vector<std::size_t>& rows,
                                                   const step_output& out, std::uint32_t& n_tiles) {
    step_layout L;
    n_tiles = 0;
    L.real_rows = fill_rows(batch, n_tiles);
    L.T = L.real_rows;
    const bool decode_only = std::all_of(batch.begin(), batch.end(), [](const seq_chunk& c) {
        return c.tokens.size() == 1 && c.want_logits && !c.all_logits;
    });
    if (decode_only && recorded_rows_ > 0) {
        const std::uint32_t max_ctx = *std::max_element(n_ctx_.h(), n_ctx_.h() + L.real_rows);
        const std::uint32_t bucket = pow2_at_least(L.real_rows);
        const std::uint32_t ctx = context_bucket(max_ctx, rope_positions_);
        if (bucket <= recorded_rows_ && bucket <= logits_rows_max_ &&
            std::uint64_t{bucket} * ctx <= scratch_row_ctx_) {
            L.recorded = true;
            L.T = bucket;
            L.key = {bucket, ctx, !samples.empty()};
        }
    }
    L.logit_rows = rows;
    for (std::uint32_t r = L.real_rows; L.recorded && r < L.T; ++r)
        L.logit_rows.push_back(r); // padding: computed, never read
    L.download.assign(L.logit_rows.size(), true);
    std::fill(L.download.begin() + static_cast<std::ptrdiff_t>(rows.size()), L.download.end(),
              false);
    L.sample_of_row.assign(L.logit_rows.size(), -1);
    L.slot_of_sample.resize(samples.size());
    std::vector<std::int32_t> sample_at_row(L.logit_rows.size(), -1);
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const std::size_t row = out.rows_for_chunk[samples[i].chunk];
        sample_at_row[row] = static_cast<std::int32_t>(i);
        if (!samples[i].return_logits && !batch[samples[i].chunk].all_logits)
            L.download[row] = false;
    }
    std::int32_t slot = 0;
    for (std::size_t r = 0; r < L.logit_rows.size(); ++r)
        if (sample_at_row[r] >= 0 || (L.recorded && !samples.empty())) {
            L.sample_of_row[r] = slot;
            if (sample_at_row[r] >= 0)
                L.slot_of_sample[static_cast<std::size_t>(sample_at_row[r])] =
                    static_cast<std::uint32_t>(slot);
            ++slot;
        }
    if (L.recorded) {
        k_tiles_.h()[n_tiles] = cache_.k_tile_offset(trash_block_, 0);
        v_tiles_.h()[n_tiles] = cache_.v_tile_offset(trash_block_, 0);
        pad_rows(L.real_rows, L.T, n_tiles++);
        groups_.assign(1, {0, L.T, L.key.ctx});
    } else {
        plan_attention_groups(L);
    }
    for (std::size_t j = 0; j < L.logit_rows.size(); ++j)
        rows_.h()[j] = static_cast<std::int32_t>(L.logit_rows[j]);
    fill_samples(samples, L);
    return L;
}

// One upload per table, of what the step filled (the device buffers stay where they are).
void cuda_engine::upload_step(const step_layout& L, std::uint32_t n_tiles) {
    auto up = [&](auto& s, std::size_t n) {
        if (n > 0)
            ops_->upload(s.d(), s.h(), n * sizeof(*s.h()));
    };
    const std::uint32_t T = L.T;
    if (device_embedding_)
        up(tokens_, T);
    else
        ops_->upload(x_.as<void>(), embd_host_.as<void>(),
                     std::size_t{T} * config_.n_embd * sizeof(float));
    up(pos_, T);
    up(k_dst_, T);
    up(v_dst_, T);
    up(table_, T);
    up(n_ctx_, T);
    up(round_, T);
    up(k_tiles_, n_tiles);
    up(v_tiles_, n_tiles);
    up(rows_, L.logit_rows.size());
    up(sample_rows_, sample_slots_);
    up(sample_params_, sample_slots_);
    up(sample_adjust_, adjust_entries_);
}

step_output cuda_engine::forward(std::span<const seq_chunk> batch,
                                 std::span<const device_sample> samples) {
    const std::uint64_t kernels0 = ops_->kernels_launched();
    const std::uint64_t graphs0 = ops_->graphs_launched();
    copy_pending_blocks();
    step_output out;
    const std::vector<std::size_t> rows = select_logits_rows(batch, out);
    std::uint32_t n_tiles = 0;
    const step_layout L = prepare_step(batch, samples, rows, out, n_tiles);
    upload_step(L, n_tiles);
    const auto n_rows = static_cast<std::uint32_t>(L.logit_rows.size());
    logits_rows_fetched_ = 0;
    out.logits.resize(
        static_cast<std::size_t>(std::count(L.download.begin(), L.download.end(), true)) *
        config_.n_vocab);
    if (L.recorded) {
        cuda::launch_plan& plan = plans_[L.key];
        if (plan.empty()) {
            record_layers(plan, L.T);
            record_logits(plan, 0, L.T, L);
        }
        ops_->replay_plan(plan);
        fetch_logits(L, 0, n_rows, out);
    } else {
        cuda::launch_plan plan;
        record_layers(plan, L.T);
        ops_->run_plan(plan);
        // The logits in launches of the buffer's rows, each brought back before the next.
        for (std::uint32_t r0 = 0; r0 < n_rows; r0 += logits_rows_max_) {
            const std::uint32_t n = std::min(logits_rows_max_, n_rows - r0);
            cuda::launch_plan round;
            record_logits(round, r0, n, L);
            ops_->run_plan(round);
            fetch_logits(L, r0, n, out);
        }
    }
    collect_samples(samples, L, out);
    ops_->finish(); // the step's work is done (and its failures reported) before it returns
    last_step_ = {ops_->kernels_launched() - kernels0, ops_->graphs_launched() - graphs0,
                  L.recorded, L.T};
    return out;
}

// The downloaded rows among logits rows [r0, r0 + n) (row r at row r - r0 of the buffer) into
// out.logits, compacted in row order; rows_for_chunk and first_row_for_chunk renumbered to match
// once the last launch is in (a chunk whose row stayed on the device has no_row).
void cuda_engine::fetch_logits(const step_layout& L, std::uint32_t r0, std::uint32_t n,
                               step_output& out) {
    const std::size_t row_bytes = std::size_t{config_.n_vocab} * sizeof(float);
    std::uint32_t j = 0;
    for (std::uint32_t r = r0; r < r0 + n; ++r)
        if (L.download[r])
            ops_->download(logits_host_.as<char>() + j++ * row_bytes,
                           logits_.as<char>() + (r - r0) * row_bytes, row_bytes);
    ops_->finish();
    // No row asked for (every row sampled on the device): out.logits may be empty, and memcpy
    // takes no null pointer even for zero bytes.
    if (j > 0)
        std::memcpy(out.logits.data() + std::size_t{logits_rows_fetched_} * config_.n_vocab,
                    logits_host_.as<void>(), j * row_bytes);
    logits_rows_fetched_ += j;
    if (r0 + n < L.logit_rows.size())
        return;
    std::vector<std::size_t> index(L.logit_rows.size(), step_output::no_row);
    std::size_t kept = 0;
    for (std::size_t r = 0; r < index.size(); ++r)
        if (L.download[r])
            index[r] = kept++;
    for (auto* v : {&out.rows_for_chunk, &out.first_row_for_chunk})
        for (std::size_t& r : *v)
            if (r != step_output::no_row)
                r = index[r];
}

// The device's draws, one download, in the samples' order.
void cuda_engine::collect_samples(std::span<const device_sample> samples, const step_layout& L,
                                  step_output& out) {
    if (samples.empty())
        return;
    ops_->download(sample_out_.h(), sample_out_.d(), sample_slots_ * sizeof(cuda::sample_result));
    ops_->finish();
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const cuda::sample_result& r = sample_out_.h()[L.slot_of_sample[i]];
        device_sampled s{samples[i].chunk, r.token, r.logprob, {}};
        if (r.status == 1)
            s.error = "sampling: logit of token " + std::to_string(r.detail) + " is NaN";
        else if (r.status != 0)
            s.error = "sampling: logits row has +inf or no finite value";
        out.sampled.push_back(std::move(s));
    }
}

} // namespace bitnet::model
