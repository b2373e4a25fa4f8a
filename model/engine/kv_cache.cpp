// Paged KV cache allocator (see kv_cache.hpp for the pool layout and the copy-on-write rule).
#include "model/engine/kv_cache.hpp"

#include "kernels/attention.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

namespace bitnet::model {
namespace {

// 64 bytes: a cache line, and the widest vector load the attention kernels use.
constexpr std::size_t pool_alignment = 64;

std::string seq_name(seq_id seq) {
    return "sequence " + std::to_string(seq);
}

} // namespace

void kv_cache::aligned_delete::operator()(std::uint16_t* p) const noexcept {
    ::operator delete[](p, std::align_val_t{pool_alignment});
}

std::size_t kv_cache::row_halves(const kv_cache_options& opt) noexcept {
    return std::size_t{opt.n_kv_heads} * kernels::kv_head_halves(opt.head_dim, opt.q8_0);
}

std::uint64_t kv_cache::block_bytes(const kv_cache_options& opt) noexcept {
    return 2ull * opt.n_layer * opt.block_tokens * row_halves(opt) * sizeof(std::uint16_t);
}

result<kv_cache> kv_cache::create(const kv_cache_options& opt) {
    if (opt.n_layer == 0 || opt.n_kv_heads == 0 || opt.head_dim == 0 || opt.block_tokens == 0)
        return error(errc::invalid_argument,
                     "kv cache: n_layer, n_kv_heads, head_dim and block_tokens must be > 0 (got " +
                         std::to_string(opt.n_layer) + ", " + std::to_string(opt.n_kv_heads) +
                         ", " + std::to_string(opt.head_dim) + ", " +
                         std::to_string(opt.block_tokens) + ")");
    if (opt.q8_0 && opt.head_dim % 32 != 0)
        return error(errc::unsupported, "kv cache: Q8_0 needs a head dimension that is a multiple "
                                        "of 32 (this model's is " +
                                            std::to_string(opt.head_dim) + ")");
    const std::uint64_t per_block = block_bytes(opt);
    const std::uint64_t n_blocks = opt.budget_bytes / per_block;
    if (n_blocks == 0)
        return error(errc::invalid_argument,
                     "kv cache: budget of " + std::to_string(opt.budget_bytes) +
                         " bytes does not hold one block of " + std::to_string(per_block) +
                         " bytes (" + std::to_string(opt.block_tokens) + " tokens)");
    // Block ids are 32-bit; a pool past 4G blocks is far beyond any budget we would be given.
    if (n_blocks > 0xffffffffull)
        return error(errc::invalid_argument, "kv cache: budget gives more than 2^32 blocks");

    kv_cache c;
    c.opt_ = opt;
    c.n_blocks_ = static_cast<std::uint32_t>(n_blocks);
    c.tile_elems_ = std::size_t{opt.block_tokens} * row_halves(opt);
    // Left uninitialised on purpose: every row is written before it is read (positions below a
    // sequence's length), and touching a multi-GiB pool up front would cost seconds at start-up.
    // A device pool is the owner's to allocate: the host keeps none.
    if (!opt.device_pool)
        c.pool_.reset(static_cast<std::uint16_t*>(::operator new[](
            static_cast<std::size_t>(n_blocks * per_block), std::align_val_t{pool_alignment})));
    c.ref_counts_.assign(c.n_blocks_, 0);
    c.index_ = prefix_index(c.n_blocks_, opt.block_tokens);
    c.free_list_.resize(c.n_blocks_);
    // Stack order: block 0 on top, so allocation order is predictable in tests and logs.
    for (std::uint32_t i = 0; i < c.n_blocks_; ++i)
        c.free_list_[i] = c.n_blocks_ - 1 - i;
    return c;
}

std::uint64_t kv_cache::pool_bytes() const noexcept {
    return std::uint64_t{n_blocks_} * block_bytes(opt_);
}

std::uint32_t kv_cache::length(seq_id seq) const noexcept {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.n_tokens;
}

std::uint32_t kv_cache::blocks_for(std::uint64_t n_tokens) const noexcept {
    return static_cast<std::uint32_t>((n_tokens + opt_.block_tokens - 1) / opt_.block_tokens);
}

bool kv_cache::last_block_needs_copy(const seq_state& s, std::uint32_t n_tokens) const noexcept {
    // Only a partly filled last block receives new rows; if another sequence also references
    // it, those rows must go into a private copy.
    return n_tokens > 0 && s.n_tokens % opt_.block_tokens != 0 && !s.blocks.empty() &&
           ref_counts_[s.blocks.back()] > 1;
}

std::uint32_t kv_cache::blocks_needed(seq_id seq, std::uint32_t n_tokens) const noexcept {
    auto it = seqs_.find(seq);
    if (it == seqs_.end())
        return blocks_for(n_tokens);
    const seq_state& s = it->second;
    const std::uint32_t grow = blocks_for(std::uint64_t{s.n_tokens} + n_tokens) -
                               static_cast<std::uint32_t>(s.blocks.size());
    return grow + (last_block_needs_copy(s, n_tokens) ? 1 : 0);
}

bool kv_cache::can_append(seq_id seq, std::uint32_t n_tokens) const noexcept {
    if (std::uint64_t{length(seq)} + n_tokens > 0xffffffffull)
        return false;
    return blocks_needed(seq, n_tokens) <= n_blocks_free();
}

kv_cache::block_id kv_cache::take_block() noexcept {
    block_id b = 0;
    if (!free_list_.empty()) {
        b = free_list_.back();
        free_list_.pop_back();
    } else {
        // Callers check n_blocks_free() first, which counts parked blocks: one is there.
        b = *index_.evict_lru();
    }
    ref_counts_[b] = 1;
    return b;
}

void kv_cache::release_block(block_id b) noexcept {
    if (--ref_counts_[b] != 0)
        return;
    if (index_.indexed(b))
        index_.park(b); // stays findable until the pool needs it
    else
        free_list_.push_back(b);
}

result<void> kv_cache::allocate(seq_id seq, std::uint32_t n_tokens) {
    if (contains(seq))
        return error(errc::invalid_argument, "kv cache: " + seq_name(seq) + " already exists");
    return append(seq, n_tokens);
}

result<void> kv_cache::append(seq_id seq, std::uint32_t n_tokens) {
    const std::uint32_t old_len = length(seq);
    if (std::uint64_t{old_len} + n_tokens > 0xffffffffull)
        return error(errc::invalid_argument,
                     "kv cache: " + seq_name(seq) + " would pass 2^32 positions");
    // Check everything before touching anything, so a failure leaves no trace.
    const std::uint32_t need = blocks_needed(seq, n_tokens);
    if (need > n_blocks_free())
        return error(errc::kv_exhausted, "kv cache: " + seq_name(seq) + " needs " +
                                             std::to_string(need) + " more blocks for " +
                                             std::to_string(n_tokens) + " tokens, " +
                                             std::to_string(n_blocks_free()) + " of " +
                                             std::to_string(n_blocks_) + " free");

    seq_state& s = seqs_[seq];
    if (last_block_needs_copy(s, n_tokens)) {
        const block_id shared = s.blocks.back();
        const block_id own = take_block();
        if (pool_)
            std::memcpy(pool_.get() + tile_offset(own, 0), pool_.get() + tile_offset(shared, 0),
                        static_cast<std::size_t>(block_bytes(opt_)));
        else
            pending_copies_.push_back({shared, own}); // `shared` keeps a reference: intact
        release_block(shared);
        s.blocks.back() = own;
    }
    const std::uint32_t want = blocks_for(std::uint64_t{old_len} + n_tokens);
    while (s.blocks.size() < want)
        s.blocks.push_back(take_block());
    s.n_tokens = old_len + n_tokens;
    return {};
}

result<void> kv_cache::truncate(seq_id seq, std::uint32_t n_tokens) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end())
        return error(errc::not_found, "kv cache: " + seq_name(seq) + " is unknown");
    seq_state& s = it->second;
    if (n_tokens > s.n_tokens)
        return error(errc::invalid_argument, "kv cache: cannot drop " + std::to_string(n_tokens) +
                                                 " tokens from " + seq_name(seq) + " of length " +
                                                 std::to_string(s.n_tokens));
    s.n_tokens -= n_tokens;
    if (s.n_keyed * opt_.block_tokens > s.n_tokens) {
        // Only a failed step (its own rows) and rejected draft tokens (decode positions, never
        // in keyed blocks) truncate, so this does not happen; if it did, the keys are
        // recomputed from position 0 by the next publish.
        s.n_keyed = 0;
        s.last_key = prefix_index::scoped_root(s.scope);
    }
    const std::uint32_t keep = blocks_for(s.n_tokens);
    while (s.blocks.size() > keep) {
        release_block(s.blocks.back());
        s.blocks.pop_back();
    }
    return {};
}

void kv_cache::free(seq_id seq) noexcept {
    auto it = seqs_.find(seq);
    if (it == seqs_.end())
        return;
    for (block_id b : it->second.blocks)
        release_block(b);
    seqs_.erase(it);
}

result<void> kv_cache::fork(seq_id src, seq_id dst) {
    auto it = seqs_.find(src);
    if (it == seqs_.end())
        return error(errc::not_found, "kv cache: fork source " + seq_name(src) + " is unknown");
    if (src == dst || contains(dst))
        return error(errc::invalid_argument,
                     "kv cache: fork target " + seq_name(dst) + " already exists");
    seq_state copy = it->second; // before inserting: insertion may rehash and move `it`
    for (block_id b : copy.blocks)
        ++ref_counts_[b];
    seqs_.emplace(dst, std::move(copy));
    return {};
}

std::uint32_t kv_cache::cached_blocks(std::span<const std::int32_t> tokens,
                                      std::uint64_t scope) const {
    const std::uint32_t bt = opt_.block_tokens;
    prefix_index::key_type parent = prefix_index::scoped_root(scope);
    std::uint32_t n = 0;
    for (; std::size_t{n + 1} * bt <= tokens.size(); ++n) {
        const auto block = tokens.subspan(std::size_t{n} * bt, bt);
        const auto key = prefix_index::chain(parent, block);
        if (!index_.find(key, parent, block))
            break;
        parent = key;
    }
    return n;
}

std::uint32_t kv_cache::attach_prefix(seq_id seq, std::span<const std::int32_t> tokens,
                                      std::uint32_t max_blocks, std::uint32_t max_parked,
                                      std::uint64_t scope) {
    const std::uint32_t bt = opt_.block_tokens;
    seq_state& s = seqs_[seq];
    if (s.n_keyed == 0) {
        s.scope = scope;
        s.last_key = prefix_index::scoped_root(scope);
    }
    if (s.n_tokens % bt != 0 || s.n_tokens / bt != s.blocks.size()) {
        if (s.blocks.empty())
            seqs_.erase(seq);
        return 0;
    }
    // Keys of the blocks it holds already (computed, not attached) come first.
    const auto held = static_cast<std::uint32_t>(s.blocks.size());
    for (; s.n_keyed < held && std::size_t{s.n_keyed + 1} * bt <= tokens.size(); ++s.n_keyed)
        s.last_key =
            prefix_index::chain(s.last_key, tokens.subspan(std::size_t{s.n_keyed} * bt, bt));
    std::uint32_t attached = 0;
    if (s.n_keyed == held) {
        while (s.blocks.size() < max_blocks &&
               (s.blocks.size() + 1) * std::size_t{bt} <= tokens.size()) {
            const auto block = tokens.subspan(s.blocks.size() * bt, bt);
            const auto key = prefix_index::chain(s.last_key, block);
            const auto found = index_.find(key, s.last_key, block);
            if (!found || (ref_counts_[*found] == 0 && max_parked-- == 0))
                break;
            if (ref_counts_[*found]++ == 0)
                index_.unpark(*found);
            s.blocks.push_back(*found);
            s.n_tokens += bt;
            s.last_key = key;
            ++s.n_keyed;
            ++attached;
        }
    }
    if (s.blocks.empty())
        seqs_.erase(seq);
    return attached;
}

void kv_cache::publish_prefix(seq_id seq, std::span<const std::int32_t> tokens,
                              std::uint64_t scope) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end())
        return;
    seq_state& s = it->second;
    if (s.n_keyed == 0) {
        s.scope = scope;
        s.last_key = prefix_index::scoped_root(scope);
    }
    const std::uint32_t bt = opt_.block_tokens;
    const auto full =
        static_cast<std::uint32_t>(std::min<std::size_t>(s.n_tokens / bt, tokens.size() / bt));
    for (; s.n_keyed < full; ++s.n_keyed) {
        const auto block = tokens.subspan(std::size_t{s.n_keyed} * bt, bt);
        const auto key = prefix_index::chain(s.last_key, block);
        (void)index_.insert(s.blocks[s.n_keyed], key, s.last_key, block);
        s.last_key = key;
    }
}

std::span<const kv_cache::block_id> kv_cache::block_table(seq_id seq) const noexcept {
    auto it = seqs_.find(seq);
    if (it == seqs_.end())
        return {};
    return it->second.blocks;
}

std::size_t kv_cache::tile_offset(block_id b, std::uint32_t layer) const noexcept {
    return (std::size_t{b} * opt_.n_layer + layer) * 2 * tile_elems_;
}

// Null in device mode (no host pool): pointer arithmetic on null would be undefined.
std::uint16_t* kv_cache::k_tile(block_id b, std::uint32_t layer) noexcept {
    return pool_ ? pool_.get() + k_tile_offset(b, layer) : nullptr;
}
std::uint16_t* kv_cache::v_tile(block_id b, std::uint32_t layer) noexcept {
    return pool_ ? pool_.get() + v_tile_offset(b, layer) : nullptr;
}
const std::uint16_t* kv_cache::k_tile(block_id b, std::uint32_t layer) const noexcept {
    return pool_ ? pool_.get() + k_tile_offset(b, layer) : nullptr;
}
const std::uint16_t* kv_cache::v_tile(block_id b, std::uint32_t layer) const noexcept {
    return pool_ ? pool_.get() + v_tile_offset(b, layer) : nullptr;
}

std::uint64_t kv_cache::k_row_offset(seq_id seq, std::uint32_t layer,
                                     std::uint32_t pos) const noexcept {
    const seq_state& s = seqs_.find(seq)->second;
    const block_id b = s.blocks[pos / opt_.block_tokens];
    return k_tile_offset(b, layer) + (pos % opt_.block_tokens) * row_halves(opt_);
}

std::uint16_t* kv_cache::row(seq_id seq, std::uint32_t layer, std::uint32_t pos, bool v) noexcept {
    if (!pool_)
        return nullptr;
    return pool_.get() + (v ? v_row_offset(seq, layer, pos) : k_row_offset(seq, layer, pos));
}

std::uint16_t* kv_cache::k_row(seq_id seq, std::uint32_t layer, std::uint32_t pos) noexcept {
    return row(seq, layer, pos, false);
}
std::uint16_t* kv_cache::v_row(seq_id seq, std::uint32_t layer, std::uint32_t pos) noexcept {
    return row(seq, layer, pos, true);
}

kv_layer_view kv_cache::layer_view(seq_id seq, std::uint32_t layer) const {
    kv_layer_view view;
    auto it = seqs_.find(seq);
    if (it == seqs_.end())
        return view;
    const seq_state& s = it->second;
    view.n_tokens = s.n_tokens;
    view.k_blocks.reserve(s.blocks.size());
    view.v_blocks.reserve(s.blocks.size());
    for (block_id b : s.blocks) {
        view.k_blocks.push_back(k_tile(b, layer));
        view.v_blocks.push_back(v_tile(b, layer));
    }
    return view;
}

} // namespace bitnet::model
