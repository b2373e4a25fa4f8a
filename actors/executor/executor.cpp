#include "actors/executor/executor.hpp"

#include "actors/executor/engine_kinds.hpp"
#include "actors/executor/executor_internal.hpp"
#include "kernels/cuda/ops.hpp"
#include "messages/errors.hpp"
#include "model/constrain/token_constraint.hpp"
#include "model/engine/model_config.hpp"
#include "model/engine/placement/device_choice.hpp"
#include "model/engine/placement/engine_placement.hpp"
#include "model/gguf/ggml_type.hpp"
#include "model/sampling/logprobs.hpp"
#include "model/sampling/sampler.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include <malloc.h>

namespace bitnet::actors {

using executor_detail::executor_state;
using executor_detail::seq_state;

namespace {

using executor_detail::attach_cached;
using executor_detail::extend_cached;
using executor_detail::load_draft_model;
using executor_detail::masked_row;
using executor_detail::prefetch_masks;
using executor_detail::propose_drafts;
using executor_detail::publish_prefix;
using executor_detail::resume_sample;
using executor_detail::sample_into;
using executor_detail::set_mask_deadline;

/// The request's sampler; settings the sampler refuses (http/ validates the same ranges, so only
/// a direct caller can send them) fall back to greedy rather than failing the whole batch.
model::sampler make_sampler(const model::sampling_params& s) {
    if (auto smp = model::sampler::create(s))
        return std::move(*smp);
    model::sampling_params greedy;
    greedy.temperature = 0.0f;
    greedy.n_logprobs = std::clamp(s.n_logprobs, 0, model::sampling_params::max_logprobs);
    return std::move(model::sampler::create(greedy).value());
}

using executor_pointer = msg::executor_actor::stateful_pointer<executor_state>;

/// One forward pass; an exception (an allocation failing, say) is this pass's error, not the
/// actor's end (the engine leaves the KV cache as it was either way). A device's failure is not:
/// it goes on to the step handler, which ends the executor (see there).
result<model::step_output> try_step(model::engine& eng, std::span<const model::seq_chunk> chunks,
                                    std::span<const model::device_sample> samples = {}) {
    try {
        return samples.empty() ? eng.step(chunks) : eng.step_sampled(chunks, samples);
    } catch (const kernels::cuda::device_error&) {
        throw;
    } catch (const std::exception& e) {
        return error{errc::internal, std::string("step threw: ") + e.what()};
    }
}

/// Ends `c`'s sequence alone: its KV and sampler go now, and the batcher learns why.
void fail_seq(executor_state& st, const msg::step_chunk& c, const error& e, msg::step_result& out) {
    st.engine->release(c.part.seq);
    st.seqs.erase(c.part.seq);
    out.failed.push_back({c.part.seq, static_cast<std::int32_t>(e.value()), e.message, e.param});
}

/// A token id outside the vocabulary fails the whole batched pass in the engine; found here, it
/// fails only its own sequence. (Sampled ids are always in range: a bad id is a prompt's.)
result<void> check_ids(const msg::step_chunk& c, std::uint32_t n_vocab) {
    for (std::size_t i = 0; i < c.part.tokens.size(); ++i)
        if (c.part.tokens[i] < 0 || static_cast<std::uint32_t>(c.part.tokens[i]) >= n_vocab)
            return error{errc::invalid_argument,
                         "prompt token id " + std::to_string(c.part.tokens[i]) + " at position " +
                             std::to_string(c.part.pos0 + i) +
                             " is outside the model's vocabulary of " + std::to_string(n_vocab) +
                             " tokens (ids 0.." + std::to_string(n_vocab - 1) + ")",
                         "prompt"};
    return {};
}

/// A sequence's first chunk (or its first after a preemption) gets its sampler, and its
/// constraint when the request has a schema.
result<void> prepare_seq(executor_state& st, const msg::step_chunk& c) {
    auto it = st.seqs.find(c.part.seq);
    if (c.part.pos0 == 0 || it == st.seqs.end()) {
        auto smp = make_sampler(c.params);
        // Re-prefilled after a preemption: the draws continue where they stopped, so seeded
        // sampling gives the same tokens with or without KV pressure.
        smp.resume_after(c.n_sampled);
        seq_state s{std::move(smp),     {}, std::nullopt,  0, c.prefix_tokens, c.reuse_blocks,
                    c.reuse_blocks > 0, 0,  c.prefix_scope};
        s.tenant = c.tenant;
        if (!c.json_schema.empty()) {
            // The batcher compiled it before queueing: this is a cache hit.
            auto compiled = model::constrain::schema_cache::shared().get(
                c.json_schema, st.engine->vocab(), st.cancel.get());
            if (!compiled)
                return compiled.error();
            if (c.schema_opener.empty())
                s.constraint.emplace(std::move(*compiled));
            else // an auto tool call: masked only once the model opens it
                s.lazy.emplace(seq_state::lazy_schema{
                    std::move(*compiled),
                    model::constrain::call_splitter({c.schema_opener, c.opener_at_start})});
            s.replay = c.n_sampled;
        }
        st.seqs.insert_or_assign(c.part.seq, std::move(s));
    }
    return {};
}

/// Whether `c`'s rows are wanted for their first maximum alone (seq_chunk::greedy_only): greedy
/// draws that report no logprob, with no schema mask and no choices forked from them; a chunk
/// verifying drafts draws from each of its rows so. An engine with a greedy screen then skips
/// most of each row's logits product.
bool takes_first_maximum(const executor_state& st, const msg::step_chunk& c) {
    if (!c.part.want_logits || !c.fork_to.empty())
        return false;
    if (c.part.all_logits && c.n_draft == 0)
        return false; // prompt logprobs (echo): every row is scored whole
    const auto it = st.seqs.find(c.part.seq);
    return it != st.seqs.end() && !it->second.schema_bound() &&
           it->second.sampler.first_maximum_only();
}

/// Prompt positions (below decoded_from) a chunk computes: the prefill work it does.
std::uint32_t prompt_positions(const model::seq_chunk& part) {
    const auto end = part.pos0 + static_cast<std::uint32_t>(part.tokens.size());
    const auto lim = std::min(end, part.decoded_from);
    return lim > part.pos0 ? lim - part.pos0 : 0;
}

/// Speculative decoding: `c` holds the sequence's last token, then c.n_draft drafts, and the
/// pass computed every position as a decode (rows first.. in `so`). The sampler draws from row
/// after row, exactly as it would have step after step, while each draw equals the next draft;
/// the first draw that differs (or the one after the last draft) is the step's last token. The
/// drafts not accepted leave the KV cache, so the sequence continues as if never drafted.
void verify_drafts(executor_state& st, const msg::step_chunk& c, const model::step_output& so,
                   std::size_t k, msg::step_result& out) {
    auto& s = st.seqs.at(c.part.seq);
    const auto& toks = c.part.tokens;
    const std::size_t first =
        k < so.first_row_for_chunk.size() ? so.first_row_for_chunk[k] : model::step_output::no_row;
    if (first == model::step_output::no_row || toks.size() != std::size_t{c.n_draft} + 1)
        return fail_seq(st, c,
                        error{errc::internal, "a draft verification chunk got no logits rows "
                                              "(seq " +
                                                  std::to_string(c.part.seq) + ")"},
                        out);
    const auto n_vocab = st.engine->config().n_vocab;
    s.tokens.push_back(toks[0]);
    std::uint32_t accepted = 0;
    for (std::uint32_t j = 0; j <= c.n_draft; ++j) {
        auto r = sample_into(st, s, c.part.seq, so.row(first + j, n_vocab),
                             std::size_t{c.n_sampled} + j, out);
        if (!r)
            return fail_seq(st, c, r.error(), out);
        if (!*r && j > 0) {
            // A mask not ready after an accepted draft: verification ends with that draft as
            // the step's last token, as if sampled there (its position is dropped and decoded
            // next step, when its mask is there); only a first row defers its sample.
            out.deferred.pop_back();
            std::vector<float>().swap(s.pending_row);
            s.tokens.pop_back();
            --accepted;
            break;
        }
        if (!*r || j == c.n_draft || out.samples.back().token != toks[j + 1])
            break;
        s.tokens.push_back(toks[j + 1]); // accepted: its KV is the decode it would have been
        ++accepted;
    }
    if (auto r = st.engine->truncate(c.part.seq, c.n_draft - accepted); !r)
        return fail_seq(st, c, r.error(), out);
}

/// After a successful pass: `c` joins its sequence's tokens and, when it asked for logits, its
/// sampler draws from row `row` of `so` (the pass's chunk `chunk_index`).
void sample_chunk(executor_state& st, const msg::step_chunk& c, const model::step_output& so,
                  std::size_t row, std::size_t chunk_index, msg::step_result& out) {
    if (c.n_draft > 0)
        return verify_drafts(st, c, so, chunk_index, out);
    auto& s = st.seqs.at(c.part.seq);
    s.tokens.insert(s.tokens.end(), c.part.tokens.begin(), c.part.tokens.end());
    if (!c.part.want_logits)
        return;
    if (row == model::step_output::no_row)
        return fail_seq(st, c,
                        error{errc::internal, "engine returned no logits row for a chunk that "
                                              "asked for one (seq " +
                                                  std::to_string(c.part.seq) + ")"},
                        out);
    const auto logits = so.row(row, st.engine->config().n_vocab);
    // n > 1: the choices fork from this sequence now, while the KV holds just the prompt, and
    // draw from the same logits row, each with its own sampler (its own seed).
    for (std::size_t j = 0; j < c.fork_to.size(); ++j) {
        const auto child = c.fork_to[j];
        if (auto f = st.engine->fork(c.part.seq, child); !f) {
            for (std::size_t k = 0; k < j; ++k) {
                st.engine->release(c.fork_to[k]);
                st.seqs.erase(c.fork_to[k]);
            }
            return fail_seq(st, c, f.error(), out);
        }
        auto smp = make_sampler(j < c.fork_params.size() ? c.fork_params[j] : c.params);
        smp.resume_after(c.n_sampled);
        // Each choice continues from the prompt's schema state with a matcher of its own.
        seq_state k{std::move(smp), s.tokens, s.constraint, s.replay, {}, 0, false, 0, 0};
        k.tenant = s.tenant;
        st.seqs.insert_or_assign(child, std::move(k));
    }
    if (auto r = sample_into(st, st.seqs.at(c.part.seq), c.part.seq, logits, c.n_sampled, out); !r)
        return fail_seq(st, c, r.error(), out);
    for (const auto child : c.fork_to)
        if (auto r = sample_into(st, st.seqs.at(child), child, logits, c.n_sampled, out); !r) {
            // A choice that cannot sample fails its request like the sequence it came from.
            st.engine->release(child);
            st.seqs.erase(child);
            out.failed.push_back({child, static_cast<std::int32_t>(r.error().value()),
                                  r.error().message, r.error().param});
        }
}

/// Prompt logprobs (echo) of a chunk with all_logits: every token after the chunk's first is
/// scored from the row of the token before it, and the prompt token after the chunk
/// (c.next_token) from its last row: teacher forcing, with the sampler's convention (log-softmax
/// of the raw logits, before temperature; no repetition penalty: the model's own distribution).
/// False when it failed the sequence.
bool score_prompt_chunk(executor_state& st, const msg::step_chunk& c, const model::step_output& so,
                        std::size_t k, msg::step_result& out) {
    if (!c.part.all_logits || c.n_draft > 0)
        return true;
    const std::size_t first =
        k < so.first_row_for_chunk.size() ? so.first_row_for_chunk[k] : model::step_output::no_row;
    if (first == model::step_output::no_row) {
        fail_seq(st, c,
                 error{errc::internal, "engine returned no logits rows for a chunk that asked "
                                       "for every token's (seq " +
                                           std::to_string(c.part.seq) + ")"},
                 out);
        return false;
    }
    const auto n_vocab = st.engine->config().n_vocab;
    const auto n_top = static_cast<std::size_t>(
        std::clamp(c.params.n_logprobs, 0, model::sampling_params::max_logprobs));
    const auto& toks = c.part.tokens;
    for (std::size_t j = 0; j < toks.size(); ++j) {
        const msg::token_id target = j + 1 < toks.size() ? toks[j + 1] : c.next_token;
        if (target < 0)
            break; // the chunk ends the prompt: its last row samples instead
        auto sc = model::score_token(so.row(first + j, n_vocab), target, n_top, st.score_order);
        if (!sc) {
            fail_seq(st, c, sc.error(), out);
            return false;
        }
        msg::prompt_score p{c.part.seq, c.part.pos0 + static_cast<std::uint32_t>(j) + 1,
                            target,     sc->logprob,
                            {},         {}};
        for (const auto& alt : sc->top) {
            p.top_tokens.push_back(alt.token);
            p.top_logprobs.push_back(alt.logprob);
        }
        out.prompt_scores.push_back(std::move(p));
    }
    return true;
}

/// Runs the chunks `picked` (indices into batch.chunks; `parts` are what is left of them to
/// compute after the prefix cache) in one pass and samples them.
result<void> run_pass(executor_state& st, const msg::step_batch& batch,
                      std::span<const model::seq_chunk> parts, std::span<const std::size_t> picked,
                      msg::step_result& out) {
    std::vector<model::seq_chunk> chunks;
    chunks.reserve(picked.size());
    for (auto i : picked)
        chunks.push_back(parts[i]);
    const auto samples = executor_detail::device_samples(st, batch, picked);
    auto so = try_step(*st.engine, chunks, samples);
    if (!so)
        return so.error();
    set_mask_deadline(st);
    for (const auto& p : chunks)
        out.prompt_tokens_computed += prompt_positions(p);
    out.greedy_screened_tokens += so->screened_rows;
    for (std::size_t k = 0; k < picked.size(); ++k)
        if (const auto* d = executor_detail::device_sampled_for(*so, k)) {
            if (auto r = executor_detail::take_device_sample(st, batch.chunks[picked[k]], *d, out);
                !r)
                fail_seq(st, batch.chunks[picked[k]], r.error(), out);
        } else if (score_prompt_chunk(st, batch.chunks[picked[k]], *so, k, out))
            sample_chunk(st, batch.chunks[picked[k]], *so,
                         k < so->rows_for_chunk.size() ? so->rows_for_chunk[k]
                                                       : model::step_output::no_row,
                         k, out);
    return {};
}

/// The batched pass failed and nothing before it showed which sequence is at fault: each one
/// runs alone (a failed pass leaves every KV cache as it was), so only the sequences that fail
/// by themselves fail and the rest get the same tokens they would have had in the batch.
void run_apart(executor_state& st, const msg::step_batch& batch,
               std::span<const model::seq_chunk> parts, std::span<const std::size_t> picked,
               msg::step_result& out) {
    for (auto i : picked)
        if (auto r = run_pass(st, batch, parts, std::span<const std::size_t>(&i, 1), out); !r)
            fail_seq(st, batch.chunks[i], r.error(), out);
}

result<msg::step_result> run_step(executor_state& st, const msg::step_batch& batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (auto seq : batch.release) {
        st.engine->release(seq);
        if (st.draft)
            st.draft->release(seq);
        st.seqs.erase(seq);
    }
    msg::step_result out;
    out.step = batch.step;
    const auto n_vocab = st.engine->config().n_vocab;
    std::vector<std::size_t> picked;
    picked.reserve(batch.chunks.size());
    std::vector<model::seq_chunk> parts(batch.chunks.size());
    std::vector<std::size_t> resumed; ///< deferred samples drawn in this step
    for (std::size_t i = 0; i < batch.chunks.size(); ++i) {
        const auto& c = batch.chunks[i];
        if (c.resume_sample) {
            resumed.push_back(i);
            continue;
        }
        if (auto ok = check_ids(c, n_vocab); !ok) {
            fail_seq(st, c, ok.error(), out);
            continue;
        }
        if (auto ok = prepare_seq(st, c); !ok) {
            fail_seq(st, c, ok.error(), out);
            continue;
        }
        parts[i] = attach_cached(st, c, out);
        parts[i].greedy_only = takes_first_maximum(st, c);
        if (parts[i].tokens.empty()) {
            // All of it came from the cache (a chunk that wants logits never does).
            auto& s = st.seqs.at(c.part.seq);
            s.tokens.insert(s.tokens.end(), c.part.tokens.begin(), c.part.tokens.end());
            continue;
        }
        picked.push_back(i);
    }
    extend_cached(st, batch, parts, picked, out);
    st.step_start = t0;
    st.step_has_pass = !picked.empty();
    prefetch_masks(st, batch);
    if (!st.step_has_pass)
        set_mask_deadline(st);
    if (!picked.empty()) {
        if (auto r = run_pass(st, batch, parts, picked, out); !r) {
            if (picked.size() == 1)
                fail_seq(st, batch.chunks[picked[0]], r.error(), out);
            else
                run_apart(st, batch, parts, picked, out);
        }
    }
    for (auto i : resumed)
        if (auto r = resume_sample(st, batch.chunks[i], out); !r)
            fail_seq(st, batch.chunks[i], r.error(), out);
    for (const auto& c : batch.chunks)
        publish_prefix(st, c.part.seq);
    propose_drafts(st, batch, out);
    out.kv_blocks_free = st.engine->kv_blocks_free();
    if (st.kernels.empty()) {
        // The families the engine chose per op, once: "avx512_vnni" or "avx512_vnni,scalar".
        for (const auto& k : st.engine->kernel_choices())
            if (st.kernels.find(k.family) == std::string::npos)
                st.kernels += (st.kernels.empty() ? "" : ",") + k.family;
        if (st.kernels.empty())
            st.kernels = st.device.device;
    }
    out.kernels = st.kernels;
    out.step_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    return out;
}

/// The warm-up generation: a fixed prompt, then `n_tokens` greedy tokens, every logits row checked
/// for NaN and infinities (a file can pass every structural check and still hold non-finite
/// weights or scales). Runs on the executor's thread before the batcher exists.
msg::warmup_report run_warmup(executor_state& st, std::uint32_t n_tokens) {
    // The batcher's sequence ids are request ids (from 1); this one is never theirs.
    constexpr std::uint64_t warmup_seq = std::numeric_limits<std::uint64_t>::max();
    const auto t0 = std::chrono::steady_clock::now();
    msg::warmup_report out;
    auto& eng = *st.engine;
    const auto& tok = eng.vocab();
    model::encode_options eo;
    eo.add_bos = tok.add_bos() && tok.bos().has_value();
    auto prompt = tok.encode("The quick brown fox jumps over the lazy dog.", eo);
    std::vector<std::int32_t> tokens =
        prompt && !prompt->empty() ? std::move(*prompt) : std::vector<std::int32_t>{0};
    const std::uint32_t n_ctx = eng.config().n_ctx_train;
    if (tokens.size() + n_tokens + 1 > n_ctx)
        tokens.resize(n_ctx > n_tokens + 2 ? n_ctx - n_tokens - 2 : 1);
    const auto n_vocab = eng.config().n_vocab;
    std::uint32_t pos = 0;
    for (std::uint32_t i = 0; i <= n_tokens; ++i) {
        const model::seq_chunk chunk{warmup_seq, tokens, pos, true};
        auto so = eng.step(std::span<const model::seq_chunk>(&chunk, 1));
        if (!so) {
            out.failure =
                "warm-up step " + std::to_string(i) + " failed: " + so.error().to_string();
            break;
        }
        const auto row = so->row(0, n_vocab);
        std::size_t bad = 0;
        for (float v : row)
            bad += std::isfinite(v) ? 0 : 1;
        if (bad > 0) {
            out.failure = "warm-up step " + std::to_string(i) + ": " + std::to_string(bad) +
                          " of " + std::to_string(n_vocab) +
                          " logits are not finite (NaN or infinity)";
            break;
        }
        pos += static_cast<std::uint32_t>(tokens.size());
        if (i == n_tokens) {
            out.finite = true;
            break;
        }
        const auto best = std::max_element(row.begin(), row.end()) - row.begin();
        tokens.assign(1, static_cast<std::int32_t>(best));
        ++out.n_tokens;
    }
    eng.release(warmup_seq);
    out.took_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    return out;
}

/// Where this executor runs and why: "auto" is resolved against this build and the devices the
/// runtime sees; a named placement (the supervisor's choice from the version's device list) runs
/// where it says, with the supervisor's reason when it gave one (a fallback says from where).
model::device_choice device_of(const msg::executor_order& order) {
    if (order.device.empty() || order.device == "auto") {
        auto c = model::choose_device("auto", model::cuda_built(), model::cuda_device_count());
        if (!order.device_reason.empty())
            c.reason = order.device_reason;
        return c;
    }
    // Its canonical name ("cuda" is cuda:0); a name that is no placement fails the load, saying so.
    const auto where = model::parse_placement(order.device);
    const std::string name = where ? where->name() : order.device;
    return {name, order.device_reason.empty() ? "requested " + name : order.device_reason};
}

msg::executor_actor::behavior_type
executor_fn(executor_pointer self, msg::executor_order order,
            std::shared_ptr<model::constrain::cancel_token> cancel) {
    // Once this executor is gone (engine, KV pool and repacked weights freed on its thread),
    // hand the freed heap pages of every malloc arena back to the OS: a server that loads and
    // unloads versions keeps a flat RSS instead of one retained arena per past thread. Not under
    // AddressSanitizer: its allocator owns the heap, and glibc's malloc_trim there set up glibc's
    // own arenas behind running threads, so a thread exiting next aborted in glibc's arena
    // bookkeeping ("a->attached_threads > 0", a cluster roll test's node crashed at an unload).
#if !defined(__SANITIZE_ADDRESS__)
    self->attach_functor([] { ::malloc_trim(0); });
#endif
    auto& init = self->state;
    init.cancel = std::move(cancel);
    init.device = device_of(order);
    // The engine kinds see a concrete placement: "auto" is resolved here, once.
    order.device = init.device.device;
    init.order = std::move(order);
    auto loaded = make_engine(init.order);
    if (loaded)
        init.engine = std::move(*loaded);
    else
        // The behaviour below is never run: the actor ends with the load error as its reason.
        self->quit(msg::to_caf_error(loaded.error()));
    if (loaded && !init.order.draft_model.empty()) {
        auto draft = load_draft_model(init.order, *init.engine);
        if (draft)
            init.draft = std::move(*draft);
        else
            self->quit(msg::to_caf_error(draft.error()));
    }
    return {
        [self](msg::step_atom, const msg::step_batch& batch) -> caf::result<msg::step_result> {
            // An exception would kill the actor and every sequence with it: turn it into an
            // error for this step only.
            try {
                auto r = run_step(self->state, batch);
                if (!r)
                    return msg::to_caf_error(r.error());
                return std::move(*r);
            } catch (const kernels::cuda::device_error& e) {
                // A failed launch leaves a CUDA context unusable: every later step would fail
                // too. The executor ends as a crash does, and the supervisor starts the version
                // again on the next placement of its list (the CPU last).
                auto why = msg::to_caf_error(
                    errc::internal, self->state.device.device + " failed in a step (" +
                                        kernels::cuda::failure_name(e.kind()) + "): " + e.what());
                self->quit(why);
                return why;
            } catch (const std::exception& e) {
                return msg::to_caf_error(errc::internal, std::string("step threw: ") + e.what());
            }
        },
        [self](msg::info_atom) {
            const auto& st = self->state;
            msg::executor_info info;
            info.device = st.device.device;
            info.device_reason = st.device.reason;
            info.describe = st.engine->describe();
            info.architecture = st.engine->config().arch_name;
            info.n_ctx = st.engine->config().n_ctx_train;
            info.n_vocab = st.engine->config().n_vocab;
            info.kv_block_tokens = st.engine->kv_block_tokens();
            info.kv_blocks_total = st.engine->kv_blocks_total();
            info.eog_ids = st.order.eog_ids;
            const auto& cfg = st.engine->config();
            info.format = model::file_type_name(cfg.file_type);
            info.parameters = model::parameter_count(cfg);
            info.weight_bytes = st.engine->weight_bytes();
            info.kv_pool_bytes = st.engine->kv_pool_bytes();
            if (st.draft) {
                // What the version holds is both models.
                info.describe += "; draft model: " + st.draft->describe();
                info.weight_bytes += st.draft->weight_bytes();
                info.kv_pool_bytes += st.draft->kv_pool_bytes();
            }
            info.kernels = st.engine->kernel_choices();
            if (info.eog_ids.empty()) {
                const auto eog = st.engine->vocab().eog_ids();
                info.eog_ids.assign(eog.begin(), eog.end());
            }
            return info;
        },
        [self](msg::warmup_atom, std::uint32_t n_tokens) -> caf::result<msg::warmup_report> {
            try {
                return run_warmup(self->state, n_tokens);
            } catch (const std::exception& e) {
                msg::warmup_report r;
                r.failure = std::string("warm-up threw: ") + e.what();
                return r;
            }
        },
    };
}

} // namespace

msg::executor_actor spawn_executor(caf::actor_system& sys, msg::executor_order order,
                                   std::shared_ptr<model::constrain::cancel_token> cancel) {
    return sys.spawn<caf::detached>(executor_fn, std::move(order), std::move(cancel));
}

} // namespace bitnet::actors
