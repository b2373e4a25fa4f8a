#include "model/constrain/token_constraint.hpp"

#include "common/memory_tables.hpp"
#include "model/constrain/json_schema.hpp"
#include "model/constrain/mask_cache.hpp"
#include "model/constrain/schema_errors.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>

namespace bitnet::model::constrain {

namespace {

std::atomic<std::uint64_t> next_schema_id{1};

/// Bytes a vector's buffer holds.
template <class T>
std::uint64_t buffer_bytes(const std::vector<T>& v) {
    return v.capacity() * sizeof(T);
}

/// Bytes a string holds beyond its object (nothing while it fits the small-string buffer).
std::uint64_t heap_bytes(const std::string& s) {
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

/// A compiled pattern: at most limits::max_pattern_states NFA states with their moves and
/// character classes; charged as if full (its containers are private to pattern_regex).
constexpr std::uint64_t pattern_bytes = sizeof(pattern_regex) + limits::max_pattern_states * 96;

/// What grammar `g` holds: every node with its vectors and strings, the patterns, the tries.
std::uint64_t grammar_bytes(const grammar& g) {
    std::uint64_t n = sizeof(grammar) + buffer_bytes(g.nodes) + buffer_bytes(g.regexes) +
                      buffer_bytes(g.tries) + g.regexes.size() * pattern_bytes;
    for (const auto& x : g.nodes) {
        n += buffer_bytes(x.alts) + buffer_bytes(x.keys) + buffer_bytes(x.values) +
             buffer_bytes(x.prefix) + heap_bytes(x.bytes);
        for (const auto& k : x.keys)
            n += heap_bytes(k);
    }
    for (const auto& t : g.tries) {
        n += buffer_bytes(t.nodes);
        for (const auto& tn : t.nodes)
            n += buffer_bytes(tn.next);
    }
    return n;
}

} // namespace

bool apply_mask(const token_mask& mask, std::span<const float> row, std::vector<float>& out) {
    out.assign(row.begin(), row.end());
    bool any = false;
    for (std::size_t w = 0; w < mask.size(); ++w) {
        const std::uint64_t bits = mask[w];
        any |= bits != 0;
        if (bits == ~0ULL)
            continue;
        const std::size_t end = std::min(out.size(), (w + 1) * 64);
        for (std::size_t i = w * 64; i < end; ++i)
            if (!((bits >> (i & 63)) & 1))
                out[i] = -std::numeric_limits<float>::infinity();
    }
    return any;
}

std::shared_ptr<const vocab_index> vocab_index::build(const tokenizer& tok) {
    auto v = std::make_shared<vocab_index>();
    v->n_vocab = tok.n_vocab();
    v->pieces.resize(static_cast<std::size_t>(v->n_vocab));
    // The trie as it grows (a node's edges and ids where they are added), then laid out flat.
    struct growing_node {
        std::vector<edge> next; ///< sorted by byte
        std::vector<std::int32_t> tokens;
    };
    std::vector<growing_node> grown(1);
    for (std::int32_t id = 0; id < v->n_vocab; ++id) {
        if (tok.is_eog(id))
            continue;
        const auto t = tok.type_of(id);
        if (t == token_type::control || t == token_type::unused)
            continue;
        const std::string piece(tok.token_to_piece(id, false));
        if (piece.empty())
            continue;
        v->pieces[static_cast<std::size_t>(id)] = piece;
        v->max_piece_bytes = std::max(v->max_piece_bytes, static_cast<std::uint32_t>(piece.size()));
        std::uint32_t at = 0;
        for (char ch : piece) {
            const auto b = static_cast<std::uint8_t>(ch);
            auto& nx = grown[at].next;
            auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, std::uint32_t{0}));
            if (it != nx.end() && it->first == b) {
                at = it->second;
                continue;
            }
            const auto child = static_cast<std::uint32_t>(grown.size());
            nx.insert(it, {b, child});
            grown.emplace_back();
            at = child;
        }
        grown[at].tokens.push_back(id);
    }
    // Depth-first order, children by byte (an explicit stack: pieces can be long).
    std::vector<std::uint32_t> order;
    order.reserve(grown.size());
    std::vector<std::uint32_t> renamed(grown.size());
    std::vector<std::uint32_t> stack{0};
    while (!stack.empty()) {
        const auto at = stack.back();
        stack.pop_back();
        renamed[at] = static_cast<std::uint32_t>(order.size());
        order.push_back(at);
        const auto& nx = grown[at].next;
        for (auto it = nx.rbegin(); it != nx.rend(); ++it)
            stack.push_back(it->second);
    }
    v->nodes.resize(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        const auto& g = grown[order[i]];
        auto& n = v->nodes[i];
        n.first_edge = static_cast<std::uint32_t>(v->edges.size());
        n.n_edges = static_cast<std::uint32_t>(g.next.size());
        for (const auto& [b, child] : g.next)
            v->edges.emplace_back(b, renamed[child]);
        n.first_token = static_cast<std::uint32_t>(v->node_tokens.size());
        n.n_tokens = static_cast<std::uint32_t>(g.tokens.size());
        v->node_tokens.insert(v->node_tokens.end(), g.tokens.begin(), g.tokens.end());
    }
    const auto eog = tok.eog_ids();
    v->eog.assign(eog.begin(), eog.end());
    v->bytes = sizeof(vocab_index) + buffer_bytes(v->nodes) + buffer_bytes(v->edges) +
               buffer_bytes(v->node_tokens) + buffer_bytes(v->pieces) + buffer_bytes(v->eog);
    for (const auto& p : v->pieces)
        v->bytes += heap_bytes(p);
    return v;
}

compiled_constraint::compiled_constraint(grammar g, std::shared_ptr<const vocab_index> vocab)
    : g_(std::move(g))
    , vocab_(std::move(vocab))
    , id_(next_schema_id.fetch_add(1))
    , bytes_(sizeof(compiled_constraint) + grammar_bytes(g_)) {}

compiled_constraint::~compiled_constraint() {
    mask_cache::shared().forget(id_);
}

token_mask compiled_constraint::mask_by_scan(const byte_matcher& m) const {
    token_mask mask((static_cast<std::size_t>(vocab_->n_vocab) + 63) / 64, 0);
    for (std::int32_t id = 0; id < vocab_->n_vocab; ++id) {
        const auto& piece = vocab_->pieces[static_cast<std::size_t>(id)];
        if (piece.empty())
            continue;
        byte_matcher t = m;
        if (t.feed(g_, piece))
            mask[static_cast<std::size_t>(id) >> 6] |= 1ULL << (id & 63);
    }
    set_eog(m, mask);
    return mask;
}

std::shared_ptr<const token_mask> compiled_constraint::cached_mask(const byte_matcher& m) const {
    return mask_cache::shared().find(id_, mask_key(m), false);
}

token_constraint::token_constraint(std::shared_ptr<const compiled_constraint> c)
    : c_(std::move(c))
    , m_(byte_matcher::start(c_->rules())) {}

bool token_constraint::accept(std::int32_t id) {
    const auto& v = c_->vocab();
    if (id < 0 || id >= v.n_vocab)
        return false;
    if (std::find(v.eog.begin(), v.eog.end(), id) != v.eog.end())
        return m_.complete(c_->rules());
    const auto& piece = v.pieces[static_cast<std::size_t>(id)];
    if (piece.empty())
        return false;
    return m_.feed(c_->rules(), piece);
}

std::shared_ptr<schema_cache::vocab_entry> schema_cache::vocab_of(const tokenizer& tok) {
    const void* addr = &tok.vocab();
    {
        std::lock_guard lk(mu_);
        // An entry whose tokenizer is gone is stale: its address may now be another's.
        if (auto it = vocabs_.find(addr); it != vocabs_.end() && !it->second->life.expired())
            return it->second;
        drop_gone_vocabularies();
    }
    // The content that decides the masks: every piece and the end-of-generation ids.
    std::string fp = std::to_string(tok.n_vocab()) + ':';
    std::size_t h = 0;
    for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
        h = h * 1000003u ^ std::hash<std::string_view>{}(tok.token_to_piece(id, false)) ^
            static_cast<std::size_t>(tok.type_of(id));
    for (auto id : tok.eog_ids())
        h = h * 31u + static_cast<std::size_t>(id);
    fp += std::to_string(h);
    std::shared_ptr<const vocab_index> index;
    {
        std::lock_guard lk(mu_);
        for (const auto& [a, e] : vocabs_)
            if (e->fingerprint == fp) {
                index = e->index;
                break;
            }
    }
    if (!index)
        index = vocab_index::build(tok);
    auto e = std::make_shared<vocab_entry>(vocab_entry{tok.lifetime(), fp, index});
    std::lock_guard lk(mu_);
    vocabs_[addr] = e;
    return e;
}

void schema_cache::drop_gone_vocabularies() {
    bool gone = false;
    for (auto it = vocabs_.begin(); it != vocabs_.end();) {
        if (it->second->life.expired()) {
            it = vocabs_.erase(it);
            gone = true;
        } else {
            ++it;
        }
    }
    if (!gone)
        return;
    // Schemas compiled for a vocabulary no live tokenizer has can never be asked for again.
    std::unordered_map<std::string_view, bool> live;
    for (const auto& [a, e] : vocabs_)
        live[e->fingerprint] = true;
    for (auto it = lru_.begin(); it != lru_.end();) {
        if (live.count(it->fingerprint) > 0) {
            ++it;
            continue;
        }
        index_.erase(it->key);
        bytes_ -= it->bytes;
        it = lru_.erase(it);
    }
    for (auto it = alive_.begin(); it != alive_.end();)
        it = it->second.expired() ? alive_.erase(it) : std::next(it);
}

std::optional<result<std::shared_ptr<const compiled_constraint>>>
schema_cache::known(const std::string& key) {
    std::lock_guard lk(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        const auto& e = *it->second;
        if (e.refusal)
            return result<std::shared_ptr<const compiled_constraint>>(*e.refusal);
        return result<std::shared_ptr<const compiled_constraint>>(e.compiled);
    }
    // Evicted, but still in use by a running sequence: the same object, kept again.
    if (auto it = alive_.find(key); it != alive_.end()) {
        if (auto c = it->second.lock()) {
            entry e;
            e.key = key;
            e.fingerprint = key.substr(key.rfind('\0') + 1);
            e.bytes = key.size() + c->bytes();
            e.compiled = c;
            keep(std::move(e));
            return result<std::shared_ptr<const compiled_constraint>>(std::move(c));
        }
        alive_.erase(it);
    }
    return std::nullopt;
}

void schema_cache::keep(entry e) {
    if (e.bytes > budget_)
        return;
    bytes_ += e.bytes;
    lru_.push_front(std::move(e));
    index_[lru_.front().key] = lru_.begin();
    evict_to(budget_);
}

void schema_cache::evict_to(std::uint64_t budget) {
    while (bytes_ > budget && !lru_.empty()) {
        auto& last = lru_.back();
        index_.erase(last.key);
        bytes_ -= last.bytes;
        lru_.pop_back();
        ++evictions_;
    }
    for (auto it = alive_.begin(); it != alive_.end();)
        it = it->second.expired() ? alive_.erase(it) : std::next(it);
}

void schema_cache::set_budget(std::uint64_t bytes) {
    std::lock_guard lk(mu_);
    budget_ = bytes;
    evict_to(budget_);
}

schema_cache::figures schema_cache::snapshot() {
    std::lock_guard lk(mu_);
    drop_gone_vocabularies();
    figures f;
    f.budget_bytes = budget_;
    f.bytes = bytes_;
    for (const auto& e : lru_)
        ++(e.refusal ? f.refusals : f.schemas);
    for (const auto& [k, w] : alive_)
        f.in_use += w.expired() ? 0 : 1;
    f.evictions = evictions_;
    f.compilations = compiled_.load();
    std::unordered_map<const vocab_index*, bool> counted;
    for (const auto& [a, e] : vocabs_) {
        ++f.vocabularies;
        if (!counted[e->index.get()])
            f.vocabulary_bytes += e->index->bytes;
        counted[e->index.get()] = true;
    }
    return f;
}

std::optional<result<std::shared_ptr<const compiled_constraint>>>
schema_cache::lookup(std::string_view schema_json, const tokenizer& tok) {
    return known(std::string(schema_json) + '\0' + vocab_of(tok)->fingerprint);
}

result<std::shared_ptr<const compiled_constraint>>
schema_cache::get(std::string_view schema_json, const tokenizer& tok, const cancel_token* cancel) {
    const auto ve = vocab_of(tok);
    std::string key = std::string(schema_json) + '\0' + ve->fingerprint;
    if (auto k = known(key))
        return *k;
    const auto budget = [this] {
        std::lock_guard lk(mu_);
        return budget_;
    }();
    auto too_large = [&](const std::string& what) {
        return limit_error("schema_cache_bytes", budget,
                           what + ", more than the compiled-schema cache holds in all");
    };
    // Its text alone past the budget: refused before any compile (and not kept, it would not
    // fit; the check costs nothing the next time).
    if (key.size() > budget)
        return too_large("the schema is " + std::to_string(schema_json.size()) + " bytes");
    auto g = compile_json_schema(schema_json, cancel);
    ++compiled_;
    entry e;
    e.fingerprint = ve->fingerprint;
    if (!g) {
        // Refusals are kept too (a cancelled compile is not a refusal): a client that sends the
        // same bad schema again costs a lookup, not another compile.
        if (g.error().value() == errc::cancelled)
            return g.error();
        e.refusal = g.error();
    } else {
        auto c = std::make_shared<const compiled_constraint>(std::move(*g), ve->index);
        if (key.size() + c->bytes() > budget)
            e.refusal = too_large("the schema compiles to " + std::to_string(c->bytes()) +
                                  " bytes of grammar");
        else
            e.compiled = std::move(c);
    }
    e.bytes = key.size() + (e.compiled ? e.compiled->bytes() : e.refusal->message.size());
    e.key = std::move(key);
    std::lock_guard lk(mu_);
    // Compiled meanwhile by another thread: that one is kept, and answered.
    if (auto it = index_.find(e.key); it != index_.end()) {
        const auto& kept = *it->second;
        if (kept.refusal)
            return *kept.refusal;
        return kept.compiled;
    }
    if (e.refusal) {
        auto err = *e.refusal;
        keep(std::move(e));
        return err;
    }
    auto c = e.compiled;
    alive_[e.key] = c;
    keep(std::move(e));
    return c;
}

schema_cache& schema_cache::shared() {
    static schema_cache c;
    // Shown in /v1/stats and /metrics beside the process's other tables. The vocabulary
    // indexes are one per loaded vocabulary, bounded by the models loaded (no budget of their
    // own) and freed with the last tokenizer of theirs.
    static const bool registered = [] {
        memory::register_table("schema_cache", [] {
            const auto f = c.snapshot();
            return memory::table_figures{
                {}, f.bytes, f.budget_bytes, f.schemas + f.refusals, f.evictions};
        });
        memory::register_table("schema_vocabularies", [] {
            const auto f = c.snapshot();
            return memory::table_figures{{}, f.vocabulary_bytes, 0, f.vocabularies, 0};
        });
        return true;
    }();
    (void)registered;
    return c;
}

} // namespace bitnet::model::constrain
