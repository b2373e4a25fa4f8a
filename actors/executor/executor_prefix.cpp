// Prefix caching around an executor's step (actors/executor/executor_internal.hpp): cached whole
// blocks attached in place of computing them, hits counted per sequence, filled blocks offered
// back.
#include "actors/executor/executor_internal.hpp"

#include <algorithm>

namespace bitnet::actors::executor_detail {

namespace {

/// Prompt positions `seq` took from the prefix cache in this step.
void note_hits(msg::step_result& out, std::uint64_t seq, std::uint32_t tokens) {
    if (tokens == 0)
        return;
    out.prefix_hit_tokens += tokens;
    out.hit_seqs.push_back(seq);
    out.hit_tokens.push_back(tokens);
}

} // namespace

/// Prefix caching: attaches the cached whole blocks at the start of `c`'s chunk and returns
/// what is left to compute. When the cache holds the whole chunk (and more), nothing is left and
/// the sequence may extend past the chunk (extend_cached). The attach never leaves a lone prompt
/// token to compute (a one-token chunk is computed as a decode, so its bits would differ from an
/// uncached run's), and never the chunk's last token when it wants logits (reuse_blocks stops
/// short of it).
model::seq_chunk attach_cached(executor_state& st, const msg::step_chunk& c,
                               msg::step_result& out) {
    model::seq_chunk part = c.part;
    auto& s = st.seqs.at(c.part.seq);
    if (!s.attaching)
        return part;
    auto& eng = *st.engine;
    const std::uint32_t bt = eng.kv_block_tokens();
    const auto end = part.pos0 + static_cast<std::uint32_t>(part.tokens.size());
    if (part.pos0 % bt != 0 || part.pos0 / bt >= s.reuse_blocks) {
        s.attaching = false;
        return part;
    }
    const std::span<const msg::token_id> prefix(s.prefix_tokens);
    const auto avail = std::min(s.reuse_blocks, eng.cached_prefix_blocks(prefix, s.prefix_scope));
    auto upto = avail;
    if (std::uint64_t{avail} * bt >= end) {
        // All of the chunk is cached: its blocks (those the batcher counted for it) now.
        upto = (end + bt - 1) / bt;
    } else if (end - avail * bt == 1 && !part.decodes(end - 1) && upto > part.pos0 / bt) {
        --upto;
    }
    const auto attached = upto > part.pos0 / bt ? eng.attach_prefix(part.seq, prefix, upto,
                                                                    0xffffffffu, s.prefix_scope)
                                                : 0u;
    const auto from = std::min(end, part.pos0 + attached * bt);
    s.attached_to = part.pos0 + attached * bt;
    note_hits(out, c.part.seq, attached * bt);
    s.attaching = from == end; // the next chunk may attach further only if this one did all
    part.tokens.erase(part.tokens.begin(), part.tokens.begin() + (from - part.pos0));
    part.pos0 = from;
    return part;
}

/// Prefix caching, after every chunk of the step has attached what it covers: sequences whose
/// whole chunk came from the cache go on attaching cached blocks past it (up to reuse_blocks),
/// so a long cached prompt costs one step, not one per chunk. Referenced blocks cost nothing;
/// unreferenced (parked) ones take a free block each, and only as many are taken as the step's
/// computed chunks leave free. The batcher learns the new lengths (step_result::extended).
void extend_cached(executor_state& st, const msg::step_batch& batch,
                   std::span<const model::seq_chunk> parts, std::span<const std::size_t> picked,
                   msg::step_result& out) {
    auto& eng = *st.engine;
    std::uint64_t need = 0;
    for (auto i : picked)
        need +=
            eng.kv_blocks_needed(parts[i].seq, static_cast<std::uint32_t>(parts[i].tokens.size()));
    const std::uint32_t bt = eng.kv_block_tokens();
    for (std::size_t i = 0; i < batch.chunks.size(); ++i) {
        const auto& c = batch.chunks[i];
        auto it = st.seqs.find(c.part.seq);
        if (!parts[i].tokens.empty() || c.resume_sample || it == st.seqs.end() ||
            !it->second.attaching)
            continue; // (a resumed sample computes nothing and attaches nothing)
        auto& s = it->second;
        const auto free = eng.kv_blocks_free();
        const auto spare = free > need ? static_cast<std::uint32_t>(free - need) : 0u;
        const auto more =
            eng.attach_prefix(c.part.seq, s.prefix_tokens, s.reuse_blocks, spare, s.prefix_scope);
        note_hits(out, c.part.seq, more * bt);
        s.attached_to += more * bt;
        // The last attached block may reach past the chunk even without more blocks.
        if (s.attached_to > c.part.pos0 + c.part.tokens.size()) {
            out.extended.push_back(c.part.seq);
            out.extended_to.push_back(s.attached_to);
        }
    }
}

/// Offers the blocks `seq` has filled with prompt positions to the prefix cache.
void publish_prefix(executor_state& st, std::uint64_t seq) {
    auto it = st.seqs.find(seq);
    if (it != st.seqs.end() && !it->second.prefix_tokens.empty())
        st.engine->publish_prefix(seq, it->second.prefix_tokens, it->second.prefix_scope);
}

} // namespace bitnet::actors::executor_detail
