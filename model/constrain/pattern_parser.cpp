#include "model/constrain/pattern_parser.hpp"

#include "model/constrain/limits.hpp"
#include "model/constrain/schema_errors.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

namespace bitnet::model::constrain {

namespace {

constexpr std::uint32_t no_limit = 0xFFFFFFFF;
constexpr std::uint32_t max_cp = 0x10FFFF;

struct ast {
    enum kind_t { chr, cat, alt, rep } kind = cat;
    std::int32_t cls = -1;
    std::vector<std::unique_ptr<ast>> kids;
    std::uint32_t min = 0, max = 0;
};

/// Decodes one UTF-8 code point at `i` (a malformed byte is taken as itself).
std::uint32_t next_cp(std::string_view s, std::size_t& i) {
    const auto b = static_cast<std::uint8_t>(s[i++]);
    int more = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
    std::uint32_t cp = more == 3 ? b & 0x07 : more == 2 ? b & 0x0F : more == 1 ? b & 0x1F : b;
    for (; more > 0 && i < s.size(); --more)
        cp = (cp << 6) | (static_cast<std::uint8_t>(s[i++]) & 0x3F);
    return cp;
}

} // namespace

error pattern_unsupported(std::string_view pattern, const std::string& what) {
    return error{errc::unsupported,
                 "pattern \"" + cut_utf8(pattern, 40) + "\": " + what +
                     " is not supported (supported: literals, ., [classes], \\d \\w \\s, groups, "
                     "|, * + ? {n,m}, ^ first and $ last)"};
}

void char_class::normalize() {
    auto& r = ranges;
    // Code points past Unicode (from malformed UTF-8 in the pattern) cannot occur in a string.
    std::erase_if(r, [](const auto& x) { return x.first > max_cp; });
    for (auto& x : r)
        x.second = std::min(x.second, max_cp);
    std::sort(r.begin(), r.end());
    std::size_t out = 0;
    for (const auto& [lo, hi] : r) {
        if (out > 0 && std::uint64_t{lo} <= std::uint64_t{r[out - 1].second} + 1) {
            r[out - 1].second = std::max(r[out - 1].second, hi);
            continue;
        }
        r[out++] = {lo, hi};
    }
    r.resize(out);
    if (negated) {
        // The complement over all code points, so a lookup never needs to know.
        std::vector<std::pair<std::uint32_t, std::uint32_t>> comp;
        std::uint32_t next = 0;
        for (const auto& [lo, hi] : r) {
            if (lo > next)
                comp.emplace_back(next, lo - 1);
            next = hi + 1;
        }
        if (next <= max_cp && (r.empty() || r.back().second < max_cp))
            comp.emplace_back(next, max_cp);
        r = std::move(comp);
        negated = false;
    }
    // Surrogates are no characters of a JSON string (UTF-8 cannot hold them, and the only
    // escapes written are \u00XX): cut out, so a class of nothing else has no move.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> cut;
    for (const auto& [lo, hi] : r) {
        if (hi < 0xD800 || lo > 0xDFFF) {
            cut.emplace_back(lo, hi);
            continue;
        }
        if (lo < 0xD800)
            cut.emplace_back(lo, 0xD7FF);
        if (hi > 0xDFFF)
            cut.emplace_back(0xE000, hi);
    }
    r = std::move(cut);
    r.shrink_to_fit();
}

bool char_class::contains(std::uint32_t cp) const noexcept {
    return intersects(cp, cp);
}

bool char_class::intersects(std::uint32_t lo, std::uint32_t hi) const noexcept {
    // The first range that ends at or after lo: it meets [lo, hi] when it starts by hi.
    auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                               [](const auto& r, std::uint32_t v) { return r.second < v; });
    return it != ranges.end() && it->first <= hi;
}

struct regex_builder {
    std::string_view pat;
    std::size_t i = 0;
    std::vector<char_class> classes;
    std::optional<error> err;
    std::size_t depth = 0; ///< groups open around the parse position

    bool at_end() const { return i >= pat.size(); }
    char peek() const { return pat[i]; }

    void fail(const std::string& what) {
        if (!err)
            err = pattern_unsupported(pat, what);
    }

    std::int32_t add_class(char_class c) {
        classes.push_back(std::move(c));
        return static_cast<std::int32_t>(classes.size() - 1);
    }

    /// `\d`-style escapes as ranges; false when `c` is not one.
    static bool shorthand(char c, char_class& out) {
        using R = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
        const R digit{{'0', '9'}};
        const R word{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
        const R space{{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                      {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                      {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
        switch (c) {
        case 'd':
            out.ranges = digit;
            return true;
        case 'D':
            out.ranges = digit;
            out.negated = true;
            return true;
        case 'w':
            out.ranges = word;
            return true;
        case 'W':
            out.ranges = word;
            out.negated = true;
            return true;
        case 's':
            out.ranges = space;
            return true;
        case 'S':
            out.ranges = space;
            out.negated = true;
            return true;
        default:
            return false;
        }
    }

    /// The code point an escape stands for (after the backslash), or nothing when unsupported.
    std::optional<std::uint32_t> escaped_cp() {
        if (at_end()) {
            fail("a trailing backslash");
            return std::nullopt;
        }
        const char c = pat[i++];
        switch (c) {
        case 'n':
            return '\n';
        case 't':
            return '\t';
        case 'r':
            return '\r';
        case 'f':
            return '\f';
        case 'v':
            return '\v';
        case '0':
            return 0;
        default:
            break;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            fail(std::string("the escape \\") + c);
            return std::nullopt;
        }
        return static_cast<std::uint8_t>(c);
    }

    std::unique_ptr<ast> leaf(std::int32_t cls) {
        auto a = std::make_unique<ast>();
        a->kind = ast::chr;
        a->cls = cls;
        return a;
    }

    std::unique_ptr<ast> parse_class() { // after '['
        char_class c;
        if (!at_end() && peek() == '^') {
            c.negated = true;
            ++i;
        }
        bool first = true;
        while (!at_end() && (peek() != ']' || first)) {
            first = false;
            std::uint32_t lo = 0;
            if (peek() == '\\') {
                ++i;
                char_class sh;
                if (!at_end() && shorthand(peek(), sh)) {
                    ++i;
                    if (sh.negated) {
                        fail("a negated shorthand inside a class");
                        return nullptr;
                    }
                    c.ranges.insert(c.ranges.end(), sh.ranges.begin(), sh.ranges.end());
                    continue;
                }
                auto e = escaped_cp();
                if (!e)
                    return nullptr;
                lo = *e;
            } else {
                lo = next_cp(pat, i);
            }
            std::uint32_t hi = lo;
            if (i + 1 < pat.size() && peek() == '-' && pat[i + 1] != ']') {
                ++i;
                if (peek() == '\\') {
                    ++i;
                    auto e = escaped_cp();
                    if (!e)
                        return nullptr;
                    hi = *e;
                } else {
                    hi = next_cp(pat, i);
                }
                if (hi < lo) {
                    fail("a class range out of order");
                    return nullptr;
                }
            }
            c.ranges.emplace_back(lo, hi);
        }
        if (at_end()) {
            fail("an unclosed [");
            return nullptr;
        }
        ++i; // ']'
        c.normalize();
        return leaf(add_class(std::move(c)));
    }

    std::unique_ptr<ast> parse_atom() {
        const char c = peek();
        if (c == '(') {
            // The parser recurses once per group: its depth is bounded here, and so is the tree's
            // (and the recursion of its destructor and of build()).
            if (++depth > limits::max_pattern_nesting) {
                fail("groups nested deeper than " + std::to_string(limits::max_pattern_nesting) +
                     " (limit max_pattern_nesting)");
                return nullptr;
            }
            ++i;
            if (i + 1 < pat.size() && peek() == '?') {
                if (pat[i + 1] != ':') {
                    fail("lookaround or named groups");
                    return nullptr;
                }
                i += 2;
            }
            auto inner = parse_alt();
            if (!inner)
                return nullptr;
            if (at_end() || peek() != ')') {
                fail("an unclosed (");
                return nullptr;
            }
            ++i;
            --depth;
            return inner;
        }
        if (c == '[') {
            ++i;
            return parse_class();
        }
        if (c == '.') {
            ++i;
            char_class any;
            any.ranges = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};
            any.negated = true;
            any.normalize();
            return leaf(add_class(std::move(any)));
        }
        if (c == '^' || c == '$') {
            fail("an anchor inside the pattern");
            return nullptr;
        }
        if (c == '*' || c == '+' || c == '?' || c == '{' || c == ')' || c == ']' || c == '}') {
            fail(std::string("a bare ") + c);
            return nullptr;
        }
        std::uint32_t cp = 0;
        if (c == '\\') {
            ++i;
            char_class sh;
            if (!at_end() && shorthand(peek(), sh)) {
                ++i;
                sh.normalize();
                return leaf(add_class(std::move(sh)));
            }
            auto e = escaped_cp();
            if (!e)
                return nullptr;
            cp = *e;
        } else {
            cp = next_cp(pat, i);
        }
        char_class one;
        one.ranges = {{cp, cp}};
        if (cp > max_cp) {
            fail("a character outside Unicode");
            return nullptr;
        }
        return leaf(add_class(std::move(one)));
    }

    bool read_int(std::uint32_t& out) {
        const std::size_t s = i;
        out = 0;
        while (!at_end() && peek() >= '0' && peek() <= '9' && out < 1000)
            out = out * 10 + static_cast<std::uint32_t>(pat[i++] - '0');
        return i > s;
    }

    std::unique_ptr<ast> parse_repeat() {
        auto a = parse_atom();
        bool quantified = false;
        while (a && !at_end()) {
            std::uint32_t mn = 0, mx = 0;
            const char c = peek();
            if (c == '*')
                mn = 0, mx = no_limit;
            else if (c == '+')
                mn = 1, mx = no_limit;
            else if (c == '?')
                mn = 0, mx = 1;
            else if (c == '{') {
                ++i;
                if (!read_int(mn)) {
                    fail("a { that is not a count");
                    return nullptr;
                }
                mx = mn;
                if (!at_end() && peek() == ',') {
                    ++i;
                    if (!read_int(mx))
                        mx = no_limit;
                }
                if (at_end() || peek() != '}' || mx < mn) {
                    fail("a malformed {n,m}");
                    return nullptr;
                }
            } else {
                break;
            }
            if (quantified) {
                // ECMA-262 refuses "a**" and "a{2}{3}" ("nothing to repeat"); refusing it here
                // also keeps the tree one node deep per quantifier.
                fail("a quantifier after a quantifier");
                return nullptr;
            }
            quantified = true;
            ++i;
            if (!at_end() && peek() == '?') {
                ++i; // lazy: the same language
            }
            auto r = std::make_unique<ast>();
            r->kind = ast::rep;
            r->min = mn;
            r->max = mx;
            r->kids.push_back(std::move(a));
            a = std::move(r);
        }
        return a;
    }

    std::unique_ptr<ast> parse_cat() {
        auto a = std::make_unique<ast>();
        a->kind = ast::cat;
        while (!at_end() && peek() != '|' && peek() != ')') {
            auto k = parse_repeat();
            if (!k)
                return nullptr;
            a->kids.push_back(std::move(k));
        }
        return a;
    }

    std::unique_ptr<ast> parse_alt() {
        auto first = parse_cat();
        if (!first || at_end() || peek() != '|')
            return first;
        auto a = std::make_unique<ast>();
        a->kind = ast::alt;
        a->kids.push_back(std::move(first));
        while (!at_end() && peek() == '|') {
            ++i;
            auto k = parse_cat();
            if (!k)
                return nullptr;
            a->kids.push_back(std::move(k));
        }
        return a;
    }

    // ---- the epsilon-NFA ----
    struct eps_state {
        std::vector<std::pair<std::int32_t, std::uint32_t>> moves; ///< (class, target)
        std::vector<std::uint32_t> eps;
    };
    std::vector<eps_state> st;

    std::uint32_t fresh() {
        st.emplace_back();
        if (st.size() > 4096)
            fail("a pattern this large");
        return static_cast<std::uint32_t>(st.size() - 1);
    }

    std::uint32_t build(const ast& a, std::uint32_t entry) {
        if (err)
            return entry;
        switch (a.kind) {
        case ast::chr: {
            const auto e = fresh();
            st[entry].moves.emplace_back(a.cls, e);
            return e;
        }
        case ast::cat: {
            auto cur = entry;
            for (const auto& k : a.kids)
                cur = build(*k, cur);
            return cur;
        }
        case ast::alt: {
            const auto exit = fresh();
            for (const auto& k : a.kids) {
                const auto s = fresh();
                st[entry].eps.push_back(s);
                const auto x = build(*k, s);
                st[x].eps.push_back(exit);
            }
            return exit;
        }
        case ast::rep: {
            auto cur = entry;
            for (std::uint32_t n = 0; n < a.min && !err; ++n) {
                const auto s = fresh();
                st[cur].eps.push_back(s);
                cur = build(*a.kids[0], s);
            }
            if (a.max == no_limit) {
                const auto loop = fresh();
                st[cur].eps.push_back(loop);
                const auto body = fresh();
                st[loop].eps.push_back(body);
                const auto x = build(*a.kids[0], body);
                st[x].eps.push_back(loop);
                return loop;
            }
            for (std::uint32_t n = a.min; n < a.max && !err; ++n) {
                const auto s = fresh();
                st[cur].eps.push_back(s);
                const auto x = build(*a.kids[0], s);
                const auto e = fresh();
                st[cur].eps.push_back(e);
                st[x].eps.push_back(e);
                cur = e;
            }
            return cur;
        }
        }
        return entry;
    }

    std::vector<std::uint32_t> closure(std::uint32_t s) const {
        std::vector<std::uint32_t> out{s};
        std::vector<bool> seen(st.size());
        seen[s] = true;
        for (std::size_t k = 0; k < out.size(); ++k)
            for (auto e : st[out[k]].eps)
                if (!seen[e]) {
                    seen[e] = true;
                    out.push_back(e);
                }
        return out;
    }
};

result<reduced_nfa> parse_pattern(std::string_view pattern) {
    regex_builder b;
    std::string_view body = pattern;
    reduced_nfa out;
    if (!body.empty() && body.front() == '^') {
        out.anchored_start = true;
        body.remove_prefix(1);
    }
    if (!body.empty() && body.back() == '$' && (body.size() < 2 || body[body.size() - 2] != '\\')) {
        out.anchored_end = true;
        body.remove_suffix(1);
    }
    b.pat = body;
    auto tree = b.parse_alt();
    if (!b.err && !b.at_end())
        b.fail("an unmatched )");
    if (b.err || !tree)
        return b.err ? *b.err : pattern_unsupported(pattern, "this pattern");
    const auto entry = b.fresh();
    const auto final_state = b.build(*tree, entry);
    if (b.err)
        return *b.err;
    // The states that matter are the entry and every target of a character move.
    std::vector<std::int32_t> index(b.st.size(), -1);
    std::vector<std::uint32_t> important{entry};
    index[entry] = 0;
    for (const auto& s : b.st)
        for (const auto& [cls, t] : s.moves)
            if (index[t] < 0) {
                index[t] = static_cast<std::int32_t>(important.size());
                important.push_back(t);
            }
    out.classes = std::move(b.classes);
    out.moves.resize(important.size());
    out.match.assign(important.size(), false);
    for (std::size_t k = 0; k < important.size(); ++k)
        for (auto s : b.closure(important[k])) {
            if (s == final_state)
                out.match[k] = true;
            for (const auto& [cls, t] : b.st[s].moves)
                if (!out.classes[static_cast<std::size_t>(cls)].empty())
                    out.moves[k].emplace_back(cls, static_cast<std::uint32_t>(index[t]));
        }
    return out;
}

} // namespace bitnet::model::constrain
