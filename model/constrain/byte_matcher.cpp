// The byte matcher's API (byte_matcher.hpp) and the stepper's walk of the grammar: anyOf forks,
// literals, objects and arrays. Numbers are in byte_matcher_number.cpp, strings (escapes, UTF-8,
// length and pattern) in byte_matcher_string.cpp, to keep each file one concern.
#include "model/constrain/byte_matcher_impl.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace bitnet::model::constrain {

namespace internal {

namespace {

/// Whether the top frame `f` may end here without taking a byte.
bool may_end(const grammar& g, const frame& f) {
    const auto& n = g.nodes[f.node];
    if (n.kind == node_kind::integer || n.kind == node_kind::number)
        return number_may_end(f, n);
    if (n.kind == node_kind::literal_set)
        return f.phase != 0 && g.tries[static_cast<std::size_t>(n.set)].nodes[f.w].terminal;
    if (n.kind == node_kind::text)
        return text_may_end(g, f, n);
    return false;
}

} // namespace

/// Feeds `b` to configuration `c` (taken by value: it is the new configuration).
void stepper::step(frame_stack c, std::uint8_t b, std::uint32_t forks) {
    if (c.empty())
        return; // a whole value was written: nothing may follow
    frame& f = c.back();
    const node& n = g_.nodes[f.node];
    switch (n.kind) {
    case node_kind::nothing:
        return;
    case node_kind::any_of:
        // The compiler flattened anyOf: no alternative is another any_of, so this recursion is
        // one level deep; the check guards a grammar made some other way.
        if (forks > 0)
            return;
        for (auto alt : n.alts) {
            frame_stack d = c;
            d.back() = frame{alt};
            step(std::move(d), b, forks + 1);
        }
        return;
    case node_kind::literal:
        if (f.x < n.bytes.size() && static_cast<std::uint8_t>(n.bytes[f.x]) == b) {
            if (++f.x == n.bytes.size())
                c.pop_back();
            emit(std::move(c));
        }
        return;
    case node_kind::literal_set:
        return literal_set(std::move(c), b, n);
    case node_kind::call_union:
        return call_union(std::move(c), b, n);
    case node_kind::number:
        return number(std::move(c), b, n);
    case node_kind::integer:
        return integer(std::move(c), b, n);
    case node_kind::string:
        return string(std::move(c), b, n);
    case node_kind::object:
        return object(std::move(c), b, n);
    case node_kind::array:
        return array(std::move(c), b, n);
    case node_kind::text:
        return text(std::move(c), b, n);
    }
}

/// A child value starts with byte `b`.
void stepper::push(frame_stack c, std::uint32_t child, std::uint8_t b) {
    if (child == no_node || c.size() >= g_.max_depth)
        return;
    c.push_back(frame{child});
    step(std::move(c), b);
}

/// The top frame ended without taking `b`: its parent takes it. (Only numbers and literal sets
/// end this way, and their parent is an object or an array, which never does: no deeper.)
void stepper::end_and_pass(frame_stack c, std::uint8_t b) {
    c.pop_back();
    step(std::move(c), b);
}

/// One of a set of literals (phase 1 once started; w = the trie node reached). A literal that is
/// a prefix of another (the numbers 1 and 12) ends at the first byte that does not continue it.
void stepper::literal_set(frame_stack c, std::uint8_t b, const node& n) {
    frame& f = c.back();
    const auto& t = g_.tries[static_cast<std::size_t>(n.set)];
    const auto at = static_cast<std::uint32_t>(f.w);
    const auto next = t.step(at, b);
    if (next == byte_trie::dead) {
        if (f.phase != 0 && t.nodes[at].terminal)
            end_and_pass(std::move(c), b);
        return;
    }
    f.phase = 1;
    f.w = next;
    if (t.nodes[next].next.empty())
        c.pop_back(); // nothing can follow: the value is whole
    emit(std::move(c));
}

/// A call: `{"name":` (phase 0, x = position), the name through the trie (phase 1, w = trie
/// node), `,"arguments":` (phase 2, y = the function, x = position), its arguments (phase 3, as a
/// child), then `}` (phase 4).
void stepper::call_union(frame_stack c, std::uint8_t b, const node& n) {
    static constexpr std::string_view head = R"({"name":)";
    static constexpr std::string_view middle = R"(,"arguments":)";
    frame& f = c.back();
    const auto& t = g_.tries[static_cast<std::size_t>(n.set)];
    switch (f.phase) {
    case 0:
        if (static_cast<std::uint8_t>(head[f.x]) != b)
            return;
        if (++f.x == head.size()) {
            f.phase = 1;
            f.x = 0;
            f.w = 0;
        }
        return emit(std::move(c));
    case 1: {
        const auto next = t.step(static_cast<std::uint32_t>(f.w), b);
        if (next == byte_trie::dead)
            return;
        f.w = next;
        if (t.nodes[next].terminal) { // names are JSON strings: whole at their closing quote
            f.y = t.nodes[next].id;
            f.phase = 2;
            f.w = 0;
        }
        return emit(std::move(c));
    }
    case 2:
        if (static_cast<std::uint8_t>(middle[f.x]) != b)
            return;
        if (++f.x == middle.size())
            f.phase = 3;
        return emit(std::move(c));
    case 3:
        f.phase = 4;
        return push(std::move(c), n.values[f.y], b);
    case 4:
        if (b == '}') {
            c.pop_back();
            emit(std::move(c));
        }
        return;
    default:
        return;
    }
}

/// Declared name i may be written (its value admits something; the compiler set the value of a
/// name that admits nothing to `nothing`).
bool stepper::usable_name(const node& n, std::size_t i) const {
    return g_.nodes[n.values[i]].kind != node_kind::nothing;
}

bool stepper::more_names(const frame& f, const node& n) const {
    if (n.additional != no_node)
        return true;
    for (std::size_t i = 0; i < n.keys.size(); ++i)
        if (!((f.z >> i) & 1) && usable_name(n, i))
            return true;
    return false;
}

void stepper::object(frame_stack c, std::uint8_t b, const node& n) {
    frame& f = c.back();
    auto close = [&] {
        if ((f.z & n.required) != n.required || f.x < n.min_count)
            return;
        c.pop_back();
        emit(std::move(c));
    };
    auto name = [&] {
        if (f.x >= n.max_count)
            return;
        for (std::size_t i = 0; i < n.keys.size(); ++i)
            if (!((f.z >> i) & 1) && usable_name(n, i)) {
                frame_stack d = c;
                d.back().phase = obj_key;
                d.back().y = static_cast<std::uint32_t>(i);
                d.back().w = 0;
                emit(std::move(d));
            }
        if (n.additional != no_node && c.size() < g_.max_depth) {
            f.phase = obj_other_colon;
            c.push_back(frame{n.other_key, str_body});
            emit(std::move(c));
        }
    };
    switch (f.phase) {
    case 0:
        if (b == '{') {
            f.phase = obj_open;
            emit(std::move(c));
        }
        return;
    case obj_open:
        if (b == '}')
            return close();
        [[fallthrough]];
    case obj_after_comma:
        return b == '"' ? name() : void();
    case obj_key: {
        const auto& k = n.keys[f.y];
        if (f.w < k.size()) {
            if (static_cast<std::uint8_t>(k[f.w]) != b)
                return;
            ++f.w;
        } else {
            if (b != '"')
                return;
            f.phase = obj_colon;
            f.w = 0;
        }
        return emit(std::move(c));
    }
    case obj_colon:
    case obj_other_colon:
        if (b != ':')
            return;
        f.phase = f.phase == obj_colon ? obj_value : obj_other_value;
        return emit(std::move(c));
    case obj_value:
    case obj_other_value: {
        const auto child = f.phase == obj_value ? n.values[f.y] : n.additional;
        if (f.phase == obj_value)
            f.z |= 1ULL << f.y;
        f.y = 0;
        f.x = std::min(f.x + 1, n.count_cap);
        f.phase = obj_after_value;
        return push(std::move(c), child, b);
    }
    case obj_after_value:
        if (b == '}')
            return close();
        // A comma only where another name can follow (no dead end after it).
        if (b == ',' && f.x < n.max_count && more_names(f, n)) {
            f.phase = obj_after_comma;
            emit(std::move(c));
        }
        return;
    default:
        return;
    }
}

void stepper::array(frame_stack c, std::uint8_t b, const node& n) {
    frame& f = c.back();
    auto item_node = [&](std::uint32_t i) {
        if (i >= n.max_count)
            return no_node;
        return i < n.prefix.size() ? n.prefix[i] : n.items;
    };
    auto close = [&] {
        if (f.x < n.min_count)
            return;
        c.pop_back();
        emit(std::move(c));
    };
    auto value = [&] {
        const auto child = item_node(f.x);
        f.x = std::min(f.x + 1, n.count_cap);
        f.phase = arr_after_value;
        push(std::move(c), child, b);
    };
    switch (f.phase) {
    case 0:
        if (b == '[') {
            f.phase = arr_open;
            emit(std::move(c));
        }
        return;
    case arr_open:
        if (b == ']')
            return close();
        return value();
    case arr_after_value:
        if (b == ']')
            return close();
        if (b == ',' && item_node(f.x) != no_node) {
            f.phase = arr_after_comma;
            emit(std::move(c));
        }
        return;
    case arr_after_comma:
        return value();
    default:
        return;
    }
}

} // namespace internal

byte_matcher byte_matcher::start(const grammar& g) {
    byte_matcher m;
    m.configs_.push_back({frame{g.root}});
    return m;
}

bool byte_matcher::feed(const grammar& g, std::uint8_t b, std::uint64_t* work) {
    if (work)
        *work += configs_.size();
    // What the configurations lead to is gathered in a buffer of this thread's, which then
    // trades places with configs_: a byte allocates nothing once the buffers have grown (the
    // thread keeps one of at most limits::max_live_configs, below). The configurations are
    // replaced, so each is stepped from where it lies, not from a copy.
    thread_local std::vector<frame_stack> next;
    next.clear();
    internal::stepper s(g, next);
    for (auto& c : configs_)
        s.step(std::move(c), b);
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    if (next.size() > limits::max_live_configs) {
        std::vector<frame_stack>().swap(next); // dead: nothing of the fork's size is kept
        overflowed_ = true;
    }
    configs_.swap(next);
    // What this thread keeps is at most what a live state can need.
    if (next.capacity() > limits::max_live_configs)
        std::vector<frame_stack>().swap(next);
    return !configs_.empty();
}

bool byte_matcher::feed(const grammar& g, std::string_view s, std::uint64_t* work) {
    for (char ch : s)
        if (!feed(g, static_cast<std::uint8_t>(ch), work))
            return false;
    return true;
}

bool byte_matcher::complete(const grammar& g) const {
    for (const auto& c : configs_)
        if (c.empty() || (c.size() == 1 && internal::may_end(g, c.back())))
            return true;
    return false;
}

bool byte_matcher::finished() const noexcept {
    return !configs_.empty() &&
           std::all_of(configs_.begin(), configs_.end(), [](const auto& c) { return c.empty(); });
}

namespace {

std::string serialize(const std::vector<frame_stack>& configs) {
    std::string k;
    for (const auto& c : configs) {
        const auto n = static_cast<std::uint32_t>(c.size());
        k.append(reinterpret_cast<const char*>(&n), sizeof n);
        k.append(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(frame));
    }
    return k;
}

/// Marks of a string frame's count in a mask key (frame::aux is 0 in every real string frame).
constexpr std::uint16_t count_far = 1;   ///< no bound is within reach of one token
constexpr std::uint16_t count_below = 2; ///< minLength is out of reach of one token

} // namespace

std::string byte_matcher::key() const {
    return serialize(configs_);
}

std::string byte_matcher::mask_key(const grammar& g, std::uint32_t max_token_bytes) const {
    // A token adds at most max_token_bytes code points to a string (a code point takes at least
    // one byte). Within them the count meets minLength only at the closing quote, maxLength at
    // each character, and a pattern's fit (pattern_regex::fits) only through how much of
    // maxLength is left, which decides nothing once it is at least the pattern's longest
    // shortest completion. So every count in these zones gives the same mask. (Configurations
    // stay in their order: equal keys still mean equal states up to those counts.)
    std::string k;
    for (const auto& c : configs_) {
        const auto n_frames = static_cast<std::uint32_t>(c.size());
        k.append(reinterpret_cast<const char*>(&n_frames), sizeof n_frames);
        if (c.empty())
            continue;
        k.append(reinterpret_cast<const char*>(c.data()), (c.size() - 1) * sizeof(frame));
        frame f = c.back();
        const node& n = g.nodes[f.node];
        if (n.kind == node_kind::string && f.phase != 0) {
            // Without a pattern, the bytes a UTF-8 sequence under way still needs depend on its
            // phase alone, not on the bits of the code point so far.
            if (n.regex < 0 && f.phase >= internal::str_cont1)
                f.y = 0;
            const std::uint64_t reach =
                std::uint64_t{max_token_bytes} +
                (n.regex >= 0 ? g.regexes[static_cast<std::size_t>(n.regex)].longest_first() : 0);
            if (f.x >= n.min_count && (n.max_count == unbounded || n.max_count - f.x >= reach)) {
                f.aux = count_far;
                f.x = 0;
            } else if (n.regex < 0 && std::uint64_t{f.x} + max_token_bytes < n.min_count) {
                f.aux = count_below;
                f.x = 0;
            }
        }
        k.append(reinterpret_cast<const char*>(&f), sizeof f);
    }
    return k;
}

} // namespace bitnet::model::constrain
