#include "model/constrain/token_constraint.hpp"

#include "model/constrain/json_schema.hpp"
#include "model/constrain/mask_cache.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <string_view>

#include <time.h>

namespace bitnet::model::constrain {

namespace {

constexpr std::size_t max_cached_schemas = 256;

std::atomic<std::uint64_t> next_schema_id{1};

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
    v->nodes.emplace_back();
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
            auto& nx = v->nodes[at].next;
            auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, std::uint32_t{0}));
            if (it != nx.end() && it->first == b) {
                at = it->second;
                continue;
            }
            const auto child = static_cast<std::uint32_t>(v->nodes.size());
            nx.insert(it, {b, child});
            v->nodes.emplace_back();
            at = child;
        }
        v->nodes[at].tokens.push_back(id);
    }
    const auto eog = tok.eog_ids();
    v->eog.assign(eog.begin(), eog.end());
    return v;
}

compiled_constraint::compiled_constraint(grammar g, std::shared_ptr<const vocab_index> vocab)
    : g_(std::move(g))
    , vocab_(std::move(vocab))
    , id_(next_schema_id.fetch_add(1)) {}

compiled_constraint::~compiled_constraint() {
    mask_cache::shared().forget(id_);
}

namespace {

std::int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

error too_ambiguous() {
    return error{errc::invalid_argument,
                 "structured output: the schema is ambiguous here, with more than " +
                     std::to_string(limits::max_live_configs) +
                     " alternatives open at once (limit max_live_configs)",
                 "max_live_configs"};
}

} // namespace

/// What one mask's walk may spend, and why it stopped when it did.
struct compiled_constraint::walk_budget {
    std::uint64_t work = 0;
    std::uint64_t max_work = ~0ULL;
    /// CPU time of the computing thread (a mask worker below the kernels' priority may wait for
    /// a core: that is no work of the mask's).
    std::int64_t deadline_ns = std::numeric_limits<std::int64_t>::max();
    const cancel_token* cancel = nullptr;
    std::uint32_t calls = 0;
    std::optional<error> stop;

    bool spent() {
        if (stop)
            return true;
        if (work > max_work)
            stop = error{errc::invalid_argument,
                         "structured output: the allowed tokens of this state take more than " +
                             std::to_string(limits::max_mask_steps) +
                             " matcher steps to find (limit max_mask_steps)",
                         "max_mask_steps"};
        else if ((++calls & 255) == 0) {
            if (cancel && cancel->cancelled.load(std::memory_order_relaxed))
                stop = error{errc::cancelled, "structured output: the mask was cancelled"};
            else if (thread_cpu_ns() > deadline_ns)
                stop = error{errc::invalid_argument,
                             "structured output: the allowed tokens of this state took more than " +
                                 std::to_string(limits::max_mask_ms) +
                                 " ms to find (limit max_mask_ms)",
                             "max_mask_ms"};
        }
        return stop.has_value();
    }
};

void compiled_constraint::set_eog(const byte_matcher& m, token_mask& mask) const {
    if (!m.complete(g_))
        return;
    for (auto id : vocab_->eog)
        if (id >= 0 && id < vocab_->n_vocab)
            mask[static_cast<std::size_t>(id) >> 6] |= 1ULL << (id & 63);
}

void compiled_constraint::walk(std::uint32_t at, const byte_matcher& m, token_mask& mask,
                               walk_budget& b) const {
    const auto& n = vocab_->nodes[at];
    for (auto id : n.tokens)
        mask[static_cast<std::size_t>(id) >> 6] |= 1ULL << (id & 63);
    for (const auto& [byte, child] : n.next) {
        if (b.spent())
            return;
        byte_matcher next = m;
        if (next.feed(g_, byte, &b.work))
            walk(child, next, mask, b);
        else if (next.overflowed())
            b.stop = too_ambiguous();
    }
}

token_mask compiled_constraint::mask_by_trie(const byte_matcher& m) const {
    token_mask mask((static_cast<std::size_t>(vocab_->n_vocab) + 63) / 64, 0);
    walk_budget b;
    if (!m.dead())
        walk(0, m, mask, b);
    set_eog(m, mask);
    return mask;
}

result<token_mask> compiled_constraint::mask_within_budget(const byte_matcher& m,
                                                           const cancel_token* cancel) const {
    if (m.overflowed())
        return too_ambiguous();
    token_mask mask((static_cast<std::size_t>(vocab_->n_vocab) + 63) / 64, 0);
    walk_budget b;
    b.max_work = limits::max_mask_steps;
    b.deadline_ns = thread_cpu_ns() + limits::max_mask_ms * 1'000'000;
    b.cancel = cancel;
    if (!m.dead())
        walk(0, m, mask, b);
    if (b.stop)
        return *b.stop;
    set_eog(m, mask);
    return mask;
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

result<std::shared_ptr<const token_mask>>
compiled_constraint::mask_for(const byte_matcher& m, const cancel_token* cancel) const {
    const auto key = mask_key(m);
    auto& cache = mask_cache::shared();
    if (auto hit = cache.find(id_, key))
        return hit;
    auto mask = mask_within_budget(m, cancel);
    if (!mask)
        return mask.error();
    auto shared = std::make_shared<const token_mask>(std::move(*mask));
    ++computed_;
    cache.put(id_, key, shared);
    return shared;
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
        if (auto it = vocabs_.find(addr); it != vocabs_.end())
            return it->second;
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
        if (auto it = by_fingerprint_.find(fp); it != by_fingerprint_.end())
            index = it->second;
    }
    if (!index)
        index = vocab_index::build(tok);
    auto e = std::make_shared<vocab_entry>(vocab_entry{tok, fp, index});
    std::lock_guard lk(mu_);
    by_fingerprint_.emplace(fp, index);
    return vocabs_.emplace(addr, e).first->second;
}

std::optional<result<std::shared_ptr<const compiled_constraint>>>
schema_cache::known(const std::string& key) {
    std::lock_guard lk(mu_);
    if (auto it = schemas_.find(key); it != schemas_.end())
        return result<std::shared_ptr<const compiled_constraint>>(it->second);
    if (auto it = refused_.find(key); it != refused_.end())
        return result<std::shared_ptr<const compiled_constraint>>(it->second);
    return std::nullopt;
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
    auto g = compile_json_schema(schema_json, cancel);
    ++compiled_;
    if (!g) {
        // Refusals are kept too (a cancelled compile is not a refusal): a client that sends the
        // same bad schema again costs a lookup, not another compile.
        if (g.error().value() != errc::cancelled) {
            std::lock_guard lk(mu_);
            if (refused_.size() >= max_cached_schemas)
                refused_.clear();
            refused_.emplace(std::move(key), g.error());
        }
        return g.error();
    }
    auto c = std::make_shared<const compiled_constraint>(std::move(*g), ve->index);
    std::lock_guard lk(mu_);
    if (schemas_.size() >= max_cached_schemas)
        schemas_.clear();
    return schemas_.emplace(std::move(key), c).first->second;
}

schema_cache& schema_cache::shared() {
    static schema_cache c;
    return c;
}

} // namespace bitnet::model::constrain
