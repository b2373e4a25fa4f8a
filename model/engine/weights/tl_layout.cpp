// TL1/TL2 decoding by the verified rules of docs/GGUF-FORMAT.md §2.6, the kernel parameter table
// and bitnet.cpp's kernel_config.ini parser.
#include "model/engine/weights/tl_layout.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

namespace bitnet::model {
namespace {

std::string shape_text(std::uint32_t m, std::uint32_t k) {
    return "M×K = " + std::to_string(m) + "×" + std::to_string(k);
}

std::string params_text(const tl_params& p) {
    return "BM=" + std::to_string(p.bm) + ", BK=" + std::to_string(p.bk) +
           ", bm=" + std::to_string(p.bmm);
}

error constraint_error(tl_format f, std::uint32_t m, std::uint32_t k, const tl_params& p,
                       const std::string& rule) {
    return error(errc::unsupported_shape, std::string(tl_format_name(f)) + " parameters " +
                                              params_text(p) + " for " + shape_text(m, k) +
                                              " break the rule " + rule);
}

constexpr std::uint64_t pad32(std::uint64_t n) {
    return (n + 31) / 32 * 32;
}

// TL2 quarter swap inside each 32-byte row group (docs/GGUF-FORMAT.md §2.6): byte r of a K-step
// holds row QPOS(r); the map swaps the 2nd and 3rd 8-byte quarters and is its own inverse.
constexpr std::uint64_t qpos(std::uint64_t r) {
    constexpr std::array<std::uint64_t, 4> q{0, 2, 1, 3};
    return 8 * q[r / 8] + r % 8;
}

std::uint8_t nibble(std::uint8_t byte, bool high) {
    return high ? static_cast<std::uint8_t>(byte >> 4) : static_cast<std::uint8_t>(byte & 0x0f);
}

// Pair code c = 3·t(k) + t(k+1) + 4 (TL1 and the TL2 remainder).
void put_pair(ternary_matrix& w, std::uint64_t m, std::uint64_t k, unsigned c) {
    auto* row = w.values.data() + m * w.cols;
    row[k] = static_cast<std::int8_t>(static_cast<int>(c / 3) - 1);
    row[k + 1] = static_cast<std::int8_t>(static_cast<int>(c % 3) - 1);
}

error nibble_error(const gguf_tensor& t, std::uint64_t byte, unsigned value, unsigned max) {
    return error(errc::bad_format, std::string(ggml_type_name(t.type)) + " tensor '" +
                                       std::string(t.name) + "': nibble " + std::to_string(value) +
                                       " at byte " + std::to_string(byte) + " is above " +
                                       std::to_string(max) +
                                       " (wrong kernel parameters, or not a bitnet.cpp file)");
}

result<void> decode_tl1(const gguf_tensor& t, const tl_params& p, ternary_matrix& w) {
    const std::uint64_t m_all = w.rows, k_all = w.cols;
    const std::uint64_t bm_big = p.bm, bk = p.bk, bm = p.bmm, by = 256 / bm;
    for (std::uint64_t m = 0; m < m_all; ++m) {
        const std::uint64_t tile = m / bm_big, rb = (m % bm_big) / bm, rg = (m % bm) / 16,
                            r16 = m % 16;
        for (std::uint64_t k = 0; k < k_all; k += 2) {
            const std::uint64_t kb = k / bk, ks = (k % bk) / by, q = (k % by) / 2, kq = q / 2;
            const bool high = q % 2 == 0;
            // Outermost to innermost: M-tile, K-block, row sub-tile, K-step, 16-row group,
            // 4-column group, row within the 16 (docs/GGUF-FORMAT.md §2.6).
            std::uint64_t byte = tile * (k_all / bk) + kb;
            byte = byte * (bm_big / bm) + rb;
            byte = byte * (bk / by) + ks;
            byte = byte * (bm / 16) + rg;
            byte = byte * (by / 4) + kq;
            byte = byte * 16 + r16;
            const unsigned c = nibble(t.data[byte], high);
            if (c > 8)
                return nibble_error(t, byte, c, 8);
            put_pair(w, m, k, c);
        }
    }
    return {};
}

result<void> decode_tl2(const gguf_tensor& t, const tl_params& p, std::uint64_t a_len,
                        std::uint64_t b_len, ternary_matrix& w) {
    const std::uint64_t m_all = w.rows, k_all = w.cols;
    const std::uint64_t bm_big = p.bm, bk = p.bk;
    const std::uint64_t k3 = k_all / bk * bk, k2 = k_all - k3;
    const std::uint8_t* a = t.data;
    const std::uint8_t* b = t.data + a_len;
    const std::uint8_t* c = t.data + a_len + b_len;
    for (std::uint64_t m = 0; m < m_all; ++m) {
        const std::uint64_t tile = m / bm_big, rb = (m % bm_big) / 32, r = m % 32;
        auto* row = w.values.data() + m * k_all;
        // Region A (magnitudes) and B (signs): one triplet of columns 3u..3u+2 at a time.
        for (std::uint64_t u = 0; u < k3 / 3; ++u) {
            const std::uint64_t kb = u / (bk / 3), tb = u % (bk / 3), ks = tb / 2, tt = tb % 2;
            const std::uint64_t block = (tile * (k3 / bk) + kb) * (bm_big / 32) + rb;
            const std::uint64_t a_byte = (block * (bk / 6) + ks) * 32 + qpos(r);
            const unsigned mag = nibble(a[a_byte], tt == 0);
            if (mag > 13)
                return nibble_error(t, a_byte, mag, 13);
            const std::uint64_t g = tb / 8, t8 = tb % 8, i = 2 * t8 + r / 16, j = r % 16;
            const std::uint64_t b_word = ((block * (bk / 24) + g) * 16 + j) * 2;
            const unsigned word = b[b_word] | (static_cast<unsigned>(b[b_word + 1]) << 8);
            const bool negative = (word >> (15 - i)) & 1u;
            const int c3 = negative ? -static_cast<int>(mag) : static_cast<int>(mag);
            const int d = c3 + 13; // balanced ternary digits of c3 = 9·t0 + 3·t1 + t2
            row[3 * u] = static_cast<std::int8_t>(d / 9 - 1);
            row[3 * u + 1] = static_cast<std::int8_t>((d / 3) % 3 - 1);
            row[3 * u + 2] = static_cast<std::int8_t>(d % 3 - 1);
        }
        // Region C: the K%BK remainder as TL1-style pair codes in a TL2-style 32-row layout.
        for (std::uint64_t k = k3; k < k_all; k += 2) {
            const std::uint64_t pr = (k - k3) / 2, kb = pr / 16, ks = (pr % 16) / 2;
            const std::uint64_t c_byte =
                (((tile * (k2 / 32) + kb) * (bm_big / 32) + rb) * 8 + ks) * 32 + qpos(r);
            const unsigned code = nibble(c[c_byte], pr % 2 == 0);
            if (code > 8)
                return nibble_error(t, a_len + b_len + c_byte, code, 8);
            put_pair(w, m, k, code);
        }
    }
    return {};
}

// Trims ASCII blanks (and a CR from CRLF files).
std::string_view trim(std::string_view s) {
    const auto blank = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; };
    while (!s.empty() && blank(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && blank(s.back()))
        s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char ch) {
        return static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    });
    return out;
}

// One `[Kernels_N]` section being read.
struct ini_section {
    std::string name;
    std::size_t line = 0;
    std::array<std::optional<std::uint32_t>, 5> values; // m, k, bm, bk, bmm
};

constexpr std::array<std::string_view, 5> ini_keys{"m", "k", "bm", "bk", "bmm"};

result<void> finish_section(const ini_section& s, tl_format f, tl_param_table& table) {
    for (std::size_t i = 0; i < ini_keys.size(); ++i)
        if (!s.values[i])
            return error(errc::bad_format, "kernel_config.ini section [" + s.name + "] (line " +
                                               std::to_string(s.line) + ") has no key '" +
                                               std::string(ini_keys[i]) + "'");
    const tl_params p{*s.values[2], *s.values[3], *s.values[4]};
    auto r = table.add(f, *s.values[0], *s.values[1], p);
    if (!r)
        return error(r.error().value(), "kernel_config.ini section [" + s.name + "] (line " +
                                            std::to_string(s.line) + "): " + r.error().message);
    return {};
}

} // namespace

std::string_view tl_format_name(tl_format f) noexcept {
    return f == tl_format::tl1 ? "TL1" : "TL2";
}

result<void> validate_tl_params(tl_format f, std::uint32_t m, std::uint32_t k, const tl_params& p) {
    if (m == 0 || k == 0)
        return constraint_error(f, m, k, p, "M > 0 and K > 0");
    if (p.bm == 0 || p.bk == 0 || p.bmm == 0)
        return constraint_error(f, m, k, p, "BM, BK, bm > 0");
    if (m % p.bm != 0)
        return constraint_error(f, m, k, p, "M % BM == 0");
    if (f == tl_format::tl1) {
        if (p.bmm != 32 && p.bmm != 64)
            return constraint_error(f, m, k, p, "bm ∈ {32, 64}");
        if (p.bm % p.bmm != 0)
            return constraint_error(f, m, k, p, "BM % bm == 0");
        if (k % p.bk != 0)
            return constraint_error(f, m, k, p, "K % BK == 0");
        // A K-block is cut into steps of by = 256/bm inputs (2 pairs per 4-column group).
        if (p.bk % (256 / p.bmm) != 0)
            return constraint_error(f, m, k, p, "BK % by == 0 (by = 256/bm)");
        return {};
    }
    if (p.bmm != 32)
        return constraint_error(f, m, k, p, "bm == 32");
    if (p.bm % 32 != 0)
        return constraint_error(f, m, k, p, "BM % 32 == 0");
    // BK % 6 is the codegen's assert, but sign words cover 8 triplets, so 24 is what the
    // layout needs (docs/GGUF-FORMAT.md §2.6).
    if (p.bk % 24 != 0)
        return constraint_error(f, m, k, p, "BK % 24 == 0");
    if ((k % p.bk) % 32 != 0)
        return constraint_error(f, m, k, p, "(K % BK) % 32 == 0");
    return {};
}

result<void> tl_param_table::add(tl_format f, std::uint32_t m, std::uint32_t k,
                                 const tl_params& p) {
    BITNET_TRY(validate_tl_params(f, m, k, p));
    if (const auto* old = find(f, m, k))
        return error(errc::invalid_argument,
                     std::string(tl_format_name(f)) + " parameters for " + shape_text(m, k) +
                         " given twice (" + params_text(*old) + " and " + params_text(p) + ")");
    entries_.push_back({f, m, k, p});
    return {};
}

result<void> tl_param_table::merge(const tl_param_table& other) {
    for (const auto& e : other.entries_) {
        const auto* old = find(e.format, e.m, e.k);
        if (old && *old != e.params)
            return error(errc::invalid_argument, std::string(tl_format_name(e.format)) +
                                                     " parameters for " + shape_text(e.m, e.k) +
                                                     " conflict: " + params_text(*old) + " vs " +
                                                     params_text(e.params));
    }
    for (const auto& e : other.entries_)
        if (!find(e.format, e.m, e.k))
            entries_.push_back(e);
    return {};
}

const tl_params* tl_param_table::find(tl_format f, std::uint32_t m,
                                      std::uint32_t k) const noexcept {
    for (const auto& e : entries_)
        if (e.format == f && e.m == m && e.k == k)
            return &e.params;
    return nullptr;
}

const tl_param_table& tl_param_table::builtin() {
    // docs/GGUF-FORMAT.md §6.4 (from bitnet.cpp setup_env.py / preset_kernels): per model, its
    // shapes with BM, BK, bm listed in the same order.
    struct model_params {
        std::vector<std::array<std::uint32_t, 2>> shapes; // (M, K)
        std::vector<std::uint32_t> tl1_bm, tl1_bk, tl1_bmm, tl2_bm, tl2_bk, tl2_bmm;
    };
    static const tl_param_table table = [] {
        const model_params models[] = {
            // bitnet_b1_58-large
            {{{1536, 4096}, {1536, 1536}, {4096, 1536}},
             {256, 128, 256},
             {128, 64, 128},
             {32, 64, 32},
             {256, 128, 256},
             {96, 192, 96},
             {32, 32, 32}},
            // bitnet_b1_58-3B
            {{{3200, 8640}, {3200, 3200}, {8640, 3200}},
             {160, 320, 320},
             {64, 128, 64},
             {32, 64, 32},
             {160, 320, 320},
             {96, 96, 96},
             {32, 32, 32}},
            // Llama3-8B (and Falcon3 / Falcon-E)
            {{{14336, 4096}, {4096, 14336}, {1024, 4096}, {4096, 4096}},
             {256, 128, 256, 128},
             {128, 64, 128, 64},
             {32, 64, 32, 64},
             {256, 128, 256, 128},
             {96, 96, 96, 96},
             {32, 32, 32, 32}},
        };
        tl_param_table t;
        for (const auto& mp : models) {
            for (std::size_t i = 0; i < mp.shapes.size(); ++i) {
                const auto [m, k] = mp.shapes[i];
                // The published sets satisfy every constraint (checked by the tests).
                (void)t.add(tl_format::tl1, m, k, {mp.tl1_bm[i], mp.tl1_bk[i], mp.tl1_bmm[i]});
                (void)t.add(tl_format::tl2, m, k, {mp.tl2_bm[i], mp.tl2_bk[i], mp.tl2_bmm[i]});
            }
        }
        return t;
    }();
    return table;
}

result<tl_param_table> parse_kernel_config_ini(std::string_view text, tl_format f) {
    tl_param_table table;
    std::optional<ini_section> section;
    std::size_t line_no = 0;
    while (!text.empty()) {
        const auto eol = text.find('\n');
        const std::string_view raw = text.substr(0, eol);
        text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
        ++line_no;
        const std::string_view line = trim(raw);
        const std::string where = "kernel_config.ini line " + std::to_string(line_no);
        if (line.empty() || line.front() == '#' || line.front() == ';')
            continue;
        if (line.front() == '[') {
            if (line.back() != ']' || line.size() < 3)
                return error(errc::bad_format,
                             where + ": malformed section header '" + std::string(line) + "'");
            if (section)
                BITNET_TRY(finish_section(*section, f, table));
            section = ini_section{std::string(trim(line.substr(1, line.size() - 2))), line_no, {}};
            continue;
        }
        const auto sep = line.find_first_of("=:");
        if (sep == std::string_view::npos)
            return error(errc::bad_format,
                         where + ": expected 'key = value', got '" + std::string(line) + "'");
        if (!section)
            return error(errc::bad_format, where + ": key outside any [Kernels_N] section");
        const std::string key = lower(trim(line.substr(0, sep)));
        const std::string_view value = trim(line.substr(sep + 1));
        const auto it = std::find(ini_keys.begin(), ini_keys.end(), key);
        if (it == ini_keys.end())
            return error(errc::bad_format, where + ": unknown key '" + key + "' in section [" +
                                               section->name + "] (expected m, k, bm, bk, bmm)");
        auto& slot = section->values[static_cast<std::size_t>(it - ini_keys.begin())];
        if (slot)
            return error(errc::bad_format,
                         where + ": key '" + key + "' repeated in section [" + section->name + "]");
        std::uint32_t v = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || end != value.data() + value.size() || value.empty())
            return error(errc::bad_format, where + ": value of '" + key + "' is '" +
                                               std::string(value) +
                                               "', not an unsigned 32-bit number");
        slot = v;
    }
    if (section)
        BITNET_TRY(finish_section(*section, f, table));
    if (table.empty())
        return error(errc::bad_format, "kernel_config.ini has no [Kernels_N] section");
    return table;
}

result<tl_param_table> load_kernel_config_ini(const std::string& path, tl_format f) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return error(errc::io_error, "cannot open kernel config '" + path + "'");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad())
        return error(errc::io_error, "cannot read kernel config '" + path + "'");
    auto t = parse_kernel_config_ini(text, f);
    if (!t)
        return error(t.error().value(), path + ": " + t.error().message);
    return t;
}

result<ternary_matrix> decode_tl(const gguf_tensor& t, const tl_param_table& params) {
    if (t.type != ggml_type::tl1 && t.type != ggml_type::tl2)
        return error(errc::invalid_argument, std::string(ggml_type_name(t.type)) + " tensor '" +
                                                 std::string(t.name) + "' is not TL1 or TL2");
    const tl_format f = t.type == ggml_type::tl1 ? tl_format::tl1 : tl_format::tl2;
    auto w = internal::matrix_for(t);
    if (!w)
        return w.error();
    const std::uint32_t m = w->rows, k = w->cols;
    const std::string label =
        std::string(tl_format_name(f)) + " tensor '" + std::string(t.name) + "'";
    const tl_params* p = params.find(f, m, k);
    if (!p)
        return error(errc::unsupported_shape,
                     label + " has shape " + shape_text(m, k) + " (ne = [" + std::to_string(k) +
                         ", " + std::to_string(m) + "]) with no " + std::string(tl_format_name(f)) +
                         " kernel parameters (BM, BK, bm); its byte layout depends on them and "
                         "the GGUF does not store them. Supply the kernel_config.ini that "
                         "bitnet.cpp's code generator wrote for this model (the server's "
                         "tl_kernel_config, the CLI's --tl-kernel-config)");
    BITNET_TRY(validate_tl_params(f, m, k, *p));

    // Where the scale sits and how many bytes the layout reads (docs/GGUF-FORMAT.md §2.6).
    std::uint64_t data_len = 0, scale_at = 0, a_len = 0, b_len = 0;
    const std::uint64_t n = static_cast<std::uint64_t>(m) * k;
    if (f == tl_format::tl1) {
        data_len = n / 4;
        scale_at = pad32(data_len);
    } else {
        if (k < 256)
            return error(errc::unsupported_shape,
                         label + " has K = " + std::to_string(k) + " < 256: TL2 has no size rule");
        const std::uint64_t k3 = k / p->bk * p->bk, k2 = k - k3;
        a_len = static_cast<std::uint64_t>(m) * k3 / 6;
        b_len = static_cast<std::uint64_t>(m) * k3 / 24;
        data_len = a_len + b_len + static_cast<std::uint64_t>(m) * k2 / 4;
        const std::uint64_t rows = m;
        const std::uint64_t s = (k - 256) * rows / 3 * 5 / 8 + 256 * rows / 2 * 4 / 8;
        scale_at = pad32(s);
        if (data_len > scale_at)
            return error(errc::unsupported_shape,
                         label + ": with " + params_text(*p) + " its " + std::to_string(data_len) +
                             " bytes of codes do not fit the " + std::to_string(scale_at) +
                             " bytes bitnet.cpp reserves (K % BK too large)");
    }
    if (t.n_bytes < scale_at + 4)
        return error(errc::bad_format, label + " holds " + std::to_string(t.n_bytes) +
                                           " bytes; its layout needs " +
                                           std::to_string(scale_at + 4));
    if (f == tl_format::tl1)
        BITNET_TRY(decode_tl1(t, *p, *w));
    else
        BITNET_TRY(decode_tl2(t, *p, a_len, b_len, *w));
    std::memcpy(&w->scale, t.data + scale_at, sizeof w->scale);
    return w;
}

} // namespace bitnet::model
