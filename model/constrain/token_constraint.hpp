// Grammar -> tokens. The vocabulary's pieces (their bytes) sit in a trie built once per
// tokenizer; the allowed-token mask of a matcher state is one walk of that trie, carrying the
// matcher state down each edge and cutting every branch no configuration survives. Masks are
// cached per state key in the process's mask_cache (mask_cache.hpp), so most decode steps cost a
// hash lookup. A walk has a budget (limits::max_mask_steps, max_mask_ms, a cancel flag): a state
// too costly to mask ends its sequence with an error instead of stalling the step. A walk may run
// in slices of CPU time (mask_slice, mask_walk.hpp), so the mask worker can take turns between
// tenants.
#pragma once

#include "common/error.hpp"
#include "common/memory_tables.hpp"
#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/grammar.hpp"
#include "model/constrain/limits.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace bitnet::model::constrain {

class mask_walk; // mask_walk.hpp

/// One bit per token id; set = the token may come next.
using token_mask = std::vector<std::uint64_t>;

[[nodiscard]] inline bool mask_has(const token_mask& m, std::int32_t id) noexcept {
    return ((m[static_cast<std::size_t>(id) >> 6] >> (id & 63)) & 1) != 0;
}

/// `row` (one logits row) into `out` with every token `mask` does not allow at -infinity, so
/// the sampler can only draw allowed ones. False when the mask allows no token at all.
bool apply_mask(const token_mask& mask, std::span<const float> row, std::vector<float>& out);

/// The tokenizer's pieces as bytes and as a trie, and its end-of-generation ids.
///
/// The trie is laid out flat, nodes in depth-first order and each node's edges and token ids
/// in one shared array apiece: a mask is a depth-first walk of it, which then reads memory
/// mostly in order instead of chasing three heap blocks per node (on a 128k vocabulary the
/// walk was bound by those misses).
struct vocab_index {
    using edge = std::pair<std::uint8_t, std::uint32_t>; ///< byte, child node
    struct trie_node {
        std::uint32_t first_edge = 0;
        std::uint32_t n_edges = 0;
        std::uint32_t first_token = 0;
        std::uint32_t n_tokens = 0;
    };
    std::vector<trie_node> nodes; ///< node 0 is the root
    std::vector<edge> edges;      ///< each node's, sorted by byte
    std::vector<std::int32_t> node_tokens;

    /// Node `at`'s edges, sorted by byte.
    [[nodiscard]] std::span<const edge> next(std::uint32_t at) const noexcept {
        const auto& n = nodes[at];
        return {edges.data() + n.first_edge, n.n_edges};
    }
    /// The ids whose piece ends at node `at`.
    [[nodiscard]] std::span<const std::int32_t> tokens(std::uint32_t at) const noexcept {
        const auto& n = nodes[at];
        return {node_tokens.data() + n.first_token, n.n_tokens};
    }
    std::vector<std::string> pieces; ///< per id; empty = never emitted as text (control tokens)
    std::vector<std::int32_t> eog;
    std::int32_t n_vocab = 0;
    std::uint32_t max_piece_bytes = 0; ///< the longest piece (byte_matcher::mask_key)
    std::uint64_t bytes = 0;           ///< what it holds (build counts it)
    memory::live_counter<memory::live_kind::vocabulary> counted;

    [[nodiscard]] static std::shared_ptr<const vocab_index> build(const tokenizer& tok);
};

/// A compiled schema for one tokenizer, shared by every sequence that uses the schema. Thread
/// safe: the mask cache has a lock (held for a lookup, not while a mask is computed).
class compiled_constraint {
public:
    compiled_constraint(grammar g, std::shared_ptr<const vocab_index> vocab);
    ~compiled_constraint();
    compiled_constraint(const compiled_constraint&) = delete;
    compiled_constraint& operator=(const compiled_constraint&) = delete;

    [[nodiscard]] const grammar& rules() const noexcept { return g_; }
    [[nodiscard]] const vocab_index& vocab() const noexcept { return *vocab_; }

    /// The mask of state `m`, from the cache or computed (trie walk, within its budget) and
    /// cached. Errors: the state is past limits::max_live_configs, or its walk past the mask
    /// budget (`param` names the limit), or `cancel` was set (errc::cancelled).
    [[nodiscard]] result<std::shared_ptr<const token_mask>>
    mask_for(const byte_matcher& m, const cancel_token* cancel = nullptr) const;
    /// mask_for in slices of at most `slice_ns` of the calling thread's CPU time (the mask
    /// worker's turns between tenants). `walk` null on the first call: the cache is looked up,
    /// and on a miss the walk starts there, with `max_ms` of CPU time for all its slices
    /// (limits::max_mask_ms; a worker may be given another). A slice that ends before the walk
    /// answers null; call again with the same `walk` and `m` to go on where it stopped.
    [[nodiscard]] result<std::shared_ptr<const token_mask>>
    mask_slice(const byte_matcher& m, std::unique_ptr<mask_walk>& walk, const cancel_token* cancel,
               std::int64_t slice_ns, std::int64_t max_ms = limits::max_mask_ms) const;
    /// The mask cache's key of state `m`: states with one key have one mask.
    [[nodiscard]] std::string mask_key(const byte_matcher& m) const {
        return m.mask_key(g_, vocab_->max_piece_bytes);
    }
    /// The mask of state `m` if the cache has it (null otherwise); computes nothing.
    [[nodiscard]] std::shared_ptr<const token_mask> cached_mask(const byte_matcher& m) const;
    /// The same mask by the trie walk, uncached and with the same budget.
    [[nodiscard]] result<token_mask> mask_within_budget(const byte_matcher& m,
                                                        const cancel_token* cancel) const;
    /// The same mask by the trie walk, uncached, with no budget (tests).
    [[nodiscard]] token_mask mask_by_trie(const byte_matcher& m) const;
    /// The same mask by walking every token's piece on its own: the plain reference the trie
    /// walk is tested against.
    [[nodiscard]] token_mask mask_by_scan(const byte_matcher& m) const;
    /// How many masks were computed (cache misses).
    [[nodiscard]] std::uint64_t masks_computed() const noexcept { return computed_.load(); }
    /// The bytes its grammar holds (an estimate from the containers' capacities; the
    /// vocabulary index is shared and not counted).
    [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

private:
    grammar g_;
    std::shared_ptr<const vocab_index> vocab_;
    std::uint64_t id_; ///< this schema's key in the mask cache
    std::uint64_t bytes_;
    memory::live_counter<memory::live_kind::compiled_schema> counted_;
    mutable std::atomic<std::uint64_t> computed_{0};

    void set_eog(const byte_matcher& m, token_mask& mask) const;
    /// `w` set to walk state `m` from the trie's root (mask_walk.cpp), within the mask budget
    /// when `budgeted`.
    void start_walk(mask_walk& w, const byte_matcher& m, bool budgeted, const cancel_token* cancel,
                    std::int64_t max_ms = limits::max_mask_ms) const;
    /// Runs `w` for at most `slice_ns` of CPU time (<= 0: to its end); true when it ended
    /// (done, or stopped with w's error), false when the slice ended first.
    bool run_walk(mask_walk& w, std::int64_t slice_ns) const;
};

/// One sequence's place in its schema: the mask for the next token, and the token taken.
class token_constraint {
public:
    explicit token_constraint(std::shared_ptr<const compiled_constraint> c);

    /// The mask of the next token (compiled_constraint::mask_for's errors).
    [[nodiscard]] result<std::shared_ptr<const token_mask>>
    allowed(const cancel_token* cancel = nullptr) const {
        return c_->mask_for(m_, cancel);
    }
    /// Takes token `id`: its piece's bytes (nothing for an end-of-generation id). False when the
    /// token does not fit; the state is then dead.
    bool accept(std::int32_t id);
    /// Takes raw bytes (the part of a token after a lazy grammar's opener). False when they do
    /// not fit; the state is then dead.
    bool accept_bytes(std::string_view bytes) { return m_.feed(c_->rules(), bytes); }
    [[nodiscard]] bool complete() const { return m_.complete(c_->rules()); }
    [[nodiscard]] bool dead() const noexcept { return m_.dead(); }
    [[nodiscard]] const byte_matcher& state() const noexcept { return m_; }
    [[nodiscard]] const std::shared_ptr<const compiled_constraint>& compiled() const noexcept {
        return c_;
    }

private:
    std::shared_ptr<const compiled_constraint> c_;
    byte_matcher m_;
};

/// Compiled schemas per (schema text, tokenizer), so a schema that comes again is not compiled
/// again. One per process (`shared()`); thread safe. Bounded in bytes (`schema_cache_bytes`):
/// each entry is charged its schema text and its compiled grammar (compiled_constraint::bytes),
/// the least recently used go first, and a schema whose text or grammar alone is past the whole
/// budget is refused (limit `schema_cache_bytes`). A schema evicted while sequences still use it
/// stays theirs and is found again by the next request that sends it. What the cache keeps for a
/// tokenizer (its vocabulary index, the schemas compiled for it) goes once every tokenizer with
/// that vocabulary is gone: it holds no tokenizer itself, so an unloaded model leaves nothing.
class schema_cache {
public:
    struct figures {
        std::uint64_t budget_bytes = 0;
        std::uint64_t bytes = 0;     ///< schema texts and compiled grammars kept
        std::uint64_t schemas = 0;   ///< compiled schemas kept
        std::uint64_t refusals = 0;  ///< refused schemas kept (refused again at once)
        std::uint64_t in_use = 0;    ///< compiled schemas alive anywhere (kept or in use)
        std::uint64_t evictions = 0; ///< entries dropped for the budget
        std::uint64_t compilations = 0;
        std::uint64_t vocabularies = 0;     ///< tokenizers seen that are still alive
        std::uint64_t vocabulary_bytes = 0; ///< their vocabulary indexes (one per vocabulary)
    };

    static constexpr std::uint64_t default_budget_bytes = 128ull << 20;

    explicit schema_cache(std::uint64_t budget_bytes = default_budget_bytes)
        : budget_(budget_bytes) {}

    /// The compiled constraint of `schema_json` for `tok` (compile_json_schema's errors, and
    /// limit_exceeded naming schema_cache_bytes for a schema too large for the whole budget).
    [[nodiscard]] result<std::shared_ptr<const compiled_constraint>>
    get(std::string_view schema_json, const tokenizer& tok, const cancel_token* cancel = nullptr);
    /// What get() would answer without compiling: the cached constraint, the cached refusal (a
    /// schema refused once is refused again at once), or nothing when it was never compiled.
    [[nodiscard]] std::optional<result<std::shared_ptr<const compiled_constraint>>>
    lookup(std::string_view schema_json, const tokenizer& tok);
    /// Schemas compiled so far (misses).
    [[nodiscard]] std::uint64_t compilations() const noexcept { return compiled_.load(); }

    /// A new budget; evicts at once down to it.
    void set_budget(std::uint64_t bytes);
    /// Drops what belongs to tokenizers that are gone, then the figures.
    [[nodiscard]] figures snapshot();

    [[nodiscard]] static schema_cache& shared();

private:
    struct vocab_entry {
        std::weak_ptr<const void> life; ///< the tokenizer's (tokenizer::lifetime)
        std::string fingerprint;        ///< the vocabulary's content (two copies: one key)
        std::shared_ptr<const vocab_index> index;
    };
    struct entry {
        std::string key;         ///< schema text, NUL, vocabulary fingerprint
        std::string fingerprint; ///< the vocabulary it was compiled for
        std::shared_ptr<const compiled_constraint> compiled;
        std::optional<error> refusal;
        std::uint64_t bytes = 0;
    };
    using entries = std::list<entry>;
    mutable std::mutex mu_;
    std::uint64_t budget_;
    std::uint64_t bytes_ = 0;
    std::uint64_t evictions_ = 0;
    /// By the tokenizer's address, while that tokenizer lives: the batcher and the executor of a
    /// version load the same vocabulary separately; the fingerprint makes them share one
    /// compiled schema.
    std::unordered_map<const void*, std::shared_ptr<vocab_entry>> vocabs_;
    entries lru_;                                                   ///< most recently used first
    std::unordered_map<std::string_view, entries::iterator> index_; ///< keys live in lru_
    /// Every compiled schema still alive, kept or not: one in use is found again after eviction.
    std::unordered_map<std::string, std::weak_ptr<const compiled_constraint>> alive_;
    std::atomic<std::uint64_t> compiled_{0};

    std::shared_ptr<vocab_entry> vocab_of(const tokenizer& tok);
    /// The cached answer for `key` (schema text, NUL, vocabulary fingerprint), if any.
    std::optional<result<std::shared_ptr<const compiled_constraint>>> known(const std::string& key);
    /// Keeps `e` (mu_ held), evicting the least recently used past the budget.
    void keep(entry e);
    void evict_to(std::uint64_t budget);
    void drop_gone_vocabularies(); ///< mu_ held
};

} // namespace bitnet::model::constrain
