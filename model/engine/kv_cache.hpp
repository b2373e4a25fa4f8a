// Paged KV cache: one pool of fixed-size blocks carved out of a byte budget, a block table per
// sequence, reference-counted blocks so that forks share what they have in common. It allocates
// and hands out pointers; it computes nothing (the attention kernel reads the blocks, the forward
// pass writes new K/V rows into them).
//
// Pool layout. Block b holds, for every layer l, a K tile then a V tile, each
// [block_tokens][n_kv_heads][head_dim] F16 (stored as uint16_t), so a block is one contiguous run
// of 2 * n_layer * block_tokens * n_kv_heads * head_dim halves and copying it (copy-on-write) is
// one memcpy. With q8_0 a head's row is head_dim / 32 Q8_0 blocks of 17 halves
// (kernels/attention.hpp) instead of head_dim halves; everything else is the same:
//
//     block b: [layer 0: K tile | V tile][layer 1: K tile | V tile] ... [layer L-1: K | V]
//
// Sharing rule (copy-on-write). Positions below a sequence's length are never written again, so
// full blocks can be shared freely. A fork shares every block of the source, including a partly
// filled last block. Whoever appends first into a shared partly filled block gets a private copy
// of it (allocated by `append`, data copied for all layers) before the forward pass writes the new
// rows.
//
// Prefix caching. Full blocks can be indexed by the tokens they and everything before them hold
// (prefix_index.hpp). A new sequence attaches the longest indexed prefix instead of computing it
// (attach_prefix), taking a reference like a fork does. A block whose last reference goes stays
// indexed and counts as free: it is evicted, least recently released first, only when a block is
// needed and the free list is empty. Referenced blocks are never evicted.
//
// Device mode (kv_cache_options::device_pool): the pool lives in a GPU's memory, which the cache
// cannot touch. It then allocates no host pool and keeps only the bookkeeping above; the tiles are
// addressed by their offsets in halves (k_tile_offset, v_tile_offset, k_row_offset: the same
// arithmetic as the host layout), and the copy-on-write copies that append() would memcpy are
// recorded as (source block, destination block) pairs instead, for the owner to perform on the
// device before its next kernels (take_pending_copies). The host pointers (k_tile, k_row,
// layer_view) are null in this mode.
//
// Thread-compatibility: not synchronised; one owner (the executor's thread) calls it.
#pragma once

#include "common/error.hpp"
#include "model/engine/batch.hpp"
#include "model/engine/prefix_index.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace bitnet::model {

struct kv_cache_options {
    std::uint32_t n_layer = 0;
    std::uint32_t n_kv_heads = 0;
    std::uint32_t head_dim = 0;
    std::uint32_t block_tokens = 16;
    /// Whole pool, all layers, K and V. Rounded down to a whole number of blocks.
    std::uint64_t budget_bytes = 0;
    /// The pool lives on a device (see "Device mode"): no host pool, copies recorded.
    bool device_pool = false;
    /// K and V rows in Q8_0 (head_dim a multiple of 32): 17/32 of the F16 bytes.
    bool q8_0 = false;
};

/// A copy-on-write copy a device-mode cache leaves to its owner: the whole of block `src` (every
/// layer, K and V: block_bytes) into block `dst`.
struct kv_block_copy {
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
};

/// For one (sequence, layer): the K and V tiles holding positions [0, n_tokens), block by block.
/// Position p lives in block p / block_tokens at row p % block_tokens; each tile is
/// [block_tokens][n_kv_heads][head_dim] F16. Rows at or past n_tokens in the last block are
/// unspecified. Pointers stay valid until the sequence is appended to, freed or the cache dies.
struct kv_layer_view {
    std::vector<const std::uint16_t*> k_blocks;
    std::vector<const std::uint16_t*> v_blocks;
    std::uint32_t n_tokens = 0;
};

class kv_cache {
public:
    using block_id = std::uint32_t;

    /// Bytes one block takes: 2 (K and V) * n_layer * block_tokens * row_halves(opt) * 2.
    [[nodiscard]] static std::uint64_t block_bytes(const kv_cache_options& opt) noexcept;
    /// Halves one position's K (or V) row takes: n_kv_heads * head_dim in F16, 17/32 of that
    /// in Q8_0.
    [[nodiscard]] static std::size_t row_halves(const kv_cache_options& opt) noexcept;

    /// Allocates the pool. invalid_argument when a dimension is zero or the budget does not hold
    /// one block; kv_exhausted never (an allocation failure throws std::bad_alloc).
    [[nodiscard]] static result<kv_cache> create(const kv_cache_options& opt);

    kv_cache(kv_cache&&) noexcept = default;
    kv_cache& operator=(kv_cache&&) noexcept = default;
    kv_cache(const kv_cache&) = delete;
    kv_cache& operator=(const kv_cache&) = delete;
    ~kv_cache() = default;

    [[nodiscard]] const kv_cache_options& options() const noexcept { return opt_; }
    [[nodiscard]] std::uint32_t block_tokens() const noexcept { return opt_.block_tokens; }
    [[nodiscard]] std::uint32_t n_blocks_total() const noexcept { return n_blocks_; }
    /// Blocks a sequence can take: the free list plus indexed blocks nobody references.
    [[nodiscard]] std::uint32_t n_blocks_free() const noexcept {
        return static_cast<std::uint32_t>(free_list_.size()) + index_.n_parked();
    }
    /// Blocks in the prefix index (referenced or not).
    [[nodiscard]] std::uint32_t n_blocks_indexed() const noexcept {
        return static_cast<std::uint32_t>(index_.size());
    }
    [[nodiscard]] std::uint32_t n_blocks_used() const noexcept {
        return n_blocks_ - n_blocks_free();
    }
    /// Bytes of the pool (n_blocks_total * block_bytes).
    [[nodiscard]] std::uint64_t pool_bytes() const noexcept;

    [[nodiscard]] bool contains(seq_id seq) const noexcept { return seqs_.count(seq) != 0; }
    /// Tokens stored for `seq`; 0 for an unknown sequence.
    [[nodiscard]] std::uint32_t length(seq_id seq) const noexcept;
    [[nodiscard]] std::size_t n_sequences() const noexcept { return seqs_.size(); }

    /// Free blocks `append(seq, n_tokens)` would take (including a copy-on-write copy).
    [[nodiscard]] std::uint32_t blocks_needed(seq_id seq, std::uint32_t n_tokens) const noexcept;
    /// True when `append(seq, n_tokens)` would succeed (an unknown `seq` counts as empty).
    [[nodiscard]] bool can_append(seq_id seq, std::uint32_t n_tokens) const noexcept;

    /// Creates `seq` with room for `n_tokens` positions. invalid_argument when it already exists;
    /// kv_exhausted (and no change) when the blocks run out.
    [[nodiscard]] result<void> allocate(seq_id seq, std::uint32_t n_tokens);
    /// Grows `seq` by `n_tokens` positions (creating it when unknown), taking blocks as needed and
    /// un-sharing a shared partly filled last block. On kv_exhausted nothing changes. The caller
    /// then writes the new rows through `k_row`/`v_row`.
    [[nodiscard]] result<void> append(seq_id seq, std::uint32_t n_tokens);
    /// Drops the last `n_tokens` positions of `seq` (e.g. a failed step), returning blocks no
    /// longer needed. invalid_argument when `seq` is shorter.
    [[nodiscard]] result<void> truncate(seq_id seq, std::uint32_t n_tokens);
    /// Releases `seq`; blocks whose reference count drops to zero return to the pool. Unknown
    /// sequences are ignored (freeing twice is harmless).
    void free(seq_id seq) noexcept;
    /// Makes `dst` a copy of `src` sharing all its blocks (no data copied now). not_found when
    /// `src` is unknown, invalid_argument when `dst` exists or equals `src`.
    [[nodiscard]] result<void> fork(seq_id src, seq_id dst);

    /// How many leading whole blocks of `tokens` (a prompt from position 0) the index holds.
    [[nodiscard]] std::uint32_t cached_blocks(std::span<const std::int32_t> tokens,
                                              std::uint64_t scope = 0) const;
    /// Extends `seq` with indexed blocks of `tokens` (its tokens from position 0; a partial last
    /// block is ignored) that follow the whole blocks it holds, as long as they are found and at
    /// most up to `max_blocks` blocks in all. `seq` is created when unknown. Returns how many
    /// blocks it attached (0 when `seq`'s length is not a whole number of blocks). Attached
    /// blocks are shared read-only: nothing is copied and no block is taken from the free list.
    /// At most `max_parked` of the attached blocks may be parked ones (each takes one block off
    /// the free count; referenced ones cost nothing). `scope` (cache scope; 0 = shared) decides
    /// which blocks match: the sequence's first attach or publish fixes it.
    std::uint32_t attach_prefix(seq_id seq, std::span<const std::int32_t> tokens,
                                std::uint32_t max_blocks, std::uint32_t max_parked = 0xffffffffu,
                                std::uint64_t scope = 0);
    /// Indexes the whole blocks of `seq` that `tokens` (its tokens from position 0) covers and
    /// that are not indexed yet. The caller vouches that they were computed with prompt
    /// semantics. A block whose key another block holds stays private. Cheap when called again
    /// with the same or a longer prefix: it continues where it stopped.
    void publish_prefix(seq_id seq, std::span<const std::int32_t> tokens, std::uint64_t scope = 0);

    /// The block table of `seq` (empty for an unknown sequence).
    [[nodiscard]] std::span<const block_id> block_table(seq_id seq) const noexcept;
    /// How many sequences reference block `b`.
    [[nodiscard]] std::uint32_t ref_count(block_id b) const noexcept { return ref_counts_[b]; }

    /// K / V tile of block `b` for `layer`: [block_tokens][n_kv_heads][head_dim] F16.
    [[nodiscard]] std::uint16_t* k_tile(block_id b, std::uint32_t layer) noexcept;
    [[nodiscard]] std::uint16_t* v_tile(block_id b, std::uint32_t layer) noexcept;
    [[nodiscard]] const std::uint16_t* k_tile(block_id b, std::uint32_t layer) const noexcept;
    [[nodiscard]] const std::uint16_t* v_tile(block_id b, std::uint32_t layer) const noexcept;

    /// The row of position `pos` (< length(seq)) for writing new K / V: [n_kv_heads][head_dim]
    /// F16, or each head's Q8_0 blocks (row_halves halves either way).
    /// Writing into a row below a fork point would corrupt the sibling: write only the rows the
    /// last `append` added.
    [[nodiscard]] std::uint16_t* k_row(seq_id seq, std::uint32_t layer, std::uint32_t pos) noexcept;
    [[nodiscard]] std::uint16_t* v_row(seq_id seq, std::uint32_t layer, std::uint32_t pos) noexcept;

    /// What the attention kernel reads for (seq, layer). Empty view for an unknown sequence.
    [[nodiscard]] kv_layer_view layer_view(seq_id seq, std::uint32_t layer) const;

    // Offsets in halves from the start of the pool, the same in both modes. A tile's offset is
    // its block's offset for layer 0 plus layer_offset(layer), so one table of layer-0 offsets
    // serves every layer when the pool's base is moved by layer_offset.
    [[nodiscard]] bool has_host_pool() const noexcept { return pool_ != nullptr; }
    [[nodiscard]] std::uint64_t k_tile_offset(block_id b, std::uint32_t layer) const noexcept {
        return tile_offset(b, layer);
    }
    [[nodiscard]] std::uint64_t v_tile_offset(block_id b, std::uint32_t layer) const noexcept {
        return tile_offset(b, layer) + tile_elems_;
    }
    [[nodiscard]] std::uint64_t layer_offset(std::uint32_t layer) const noexcept {
        return tile_offset(0, layer);
    }
    /// Offset of the K row of position `pos` (< length(seq)); the V row is at + tile_elems.
    [[nodiscard]] std::uint64_t k_row_offset(seq_id seq, std::uint32_t layer,
                                             std::uint32_t pos) const noexcept;
    [[nodiscard]] std::uint64_t v_row_offset(seq_id seq, std::uint32_t layer,
                                             std::uint32_t pos) const noexcept {
        return k_row_offset(seq, layer, pos) + tile_elems_;
    }
    /// Device mode: the copy-on-write copies recorded since the last call, oldest first; the
    /// owner performs them before anything writes the destination blocks. Always empty with a
    /// host pool (append copies at once).
    [[nodiscard]] std::vector<kv_block_copy> take_pending_copies() noexcept {
        return std::exchange(pending_copies_, {});
    }

private:
    struct seq_state {
        std::vector<block_id> blocks;
        std::uint32_t n_tokens = 0;
        /// Leading blocks whose prefix key is known (attached or published), and the last one's.
        std::uint32_t n_keyed = 0;
        prefix_index::key_type last_key = prefix_index::root;
        std::uint64_t scope = 0; ///< the cache scope its keys are in
    };
    struct aligned_delete {
        void operator()(std::uint16_t* p) const noexcept;
    };

    kv_cache() = default;
    [[nodiscard]] std::size_t tile_offset(block_id b, std::uint32_t layer) const noexcept;
    [[nodiscard]] std::uint32_t blocks_for(std::uint64_t n_tokens) const noexcept;
    [[nodiscard]] bool last_block_needs_copy(const seq_state& s,
                                             std::uint32_t n_tokens) const noexcept;
    [[nodiscard]] block_id take_block() noexcept;
    void release_block(block_id b) noexcept;
    [[nodiscard]] std::uint16_t* row(seq_id seq, std::uint32_t layer, std::uint32_t pos,
                                     bool v) noexcept;

    kv_cache_options opt_;
    std::uint32_t n_blocks_ = 0;
    std::size_t tile_elems_ = 0; ///< block_tokens * n_kv_heads * head_dim
    std::unique_ptr<std::uint16_t[], aligned_delete> pool_;
    std::vector<std::uint32_t> ref_counts_; ///< per block; 0 = free
    std::vector<block_id> free_list_;       ///< a stack; lowest ids handed out first
    std::unordered_map<seq_id, seq_state> seqs_;
    prefix_index index_;
    std::vector<kv_block_copy> pending_copies_; ///< device mode only
};

} // namespace bitnet::model
