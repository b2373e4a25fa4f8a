#include "engine_figures.hpp"

#include "kernels/cpu_features.hpp"

#include <cstdio>

using namespace bitnet;

namespace {

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\';
        if (static_cast<unsigned char>(c) >= 0x20)
            out += c;
    }
    return out + "\"";
}

} // namespace

token_ceilings ceilings_of(const figures& f) {
    token_ceilings c;
    c.decode_roofline = f.bandwidth_gbs * 1e9 / f.bytes_per_token;
    c.prefill_int8 = f.int8.per_s / f.ternary_macs_per_token;
    const double s_per_token = f.ternary_macs_per_token / f.int8.per_s +
                               (f.q8_logits ? f.logits_macs_per_token / f.int8.per_s
                                            : 2 * f.logits_macs_per_token / f.fp32.per_s);
    c.aggregate = 1.0 / s_per_token;
    return c;
}

void write_json(const std::string& path, const figures& f) {
    const auto c = ceilings_of(f);
    std::string j = "{\n";
    auto num = [&](const char* key, double v, bool last = false) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "  \"%s\": %.6g%s\n", key, v, last ? "" : ",");
        j += buf;
    };
    auto str = [&](const char* key, const std::string& v) {
        j += std::string("  \"") + key + "\": " + json_string(v) + ",\n";
    };
    str("cpu_model", bench::cpu_model());
    str("cpu_flags", bench::cpu_simd_flags());
    str("kernel_family", std::string(kernels::isa_name(kernels::best_isa())));
    j += "  \"kernels\": [";
    for (std::size_t i = 0; i < f.kernels.size(); ++i) {
        const auto& k = f.kernels[i];
        j += std::string(i ? ", " : "") + "{\"op\": " + json_string(k.op) +
             ", \"family\": " + json_string(k.family) + ", \"source\": " + json_string(k.source) +
             ", \"timings_us\": {";
        for (std::size_t t = 0; t < k.timings.size(); ++t) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "%s%s: %.1f", t ? ", " : "",
                          json_string(k.timings[t].family).c_str(), k.timings[t].micros);
            j += buf;
        }
        j += "}}";
    }
    j += "],\n";
    str("model", f.model);
    str("engine", f.engine);
    num("threads", f.threads);
    num("ceiling_read_bandwidth_gbs", f.bandwidth_gbs);
    str("ceiling_int8_instruction", f.int8.instruction);
    num("ceiling_int8_gmacs", f.int8.per_s / 1e9);
    str("ceiling_fp32_instruction", f.fp32.instruction);
    num("ceiling_fp32_gflops", f.fp32.per_s / 1e9);
    num("bytes_per_decode_token", f.bytes_per_token);
    num("ternary_macs_per_token", f.ternary_macs_per_token);
    num("logits_macs_per_token", f.logits_macs_per_token);
    num("single_stream_tps", f.single_tps);
    num("single_stream_roofline_tps", c.decode_roofline);
    num("single_stream_fraction_of_roofline", f.single_tps / c.decode_roofline);
    num("prefill_tokens", static_cast<double>(f.prefill_tokens));
    num("prefill_tps", f.prefill_tps);
    num("prefill_int8_ceiling_tps", c.prefill_int8);
    num("prefill_fraction_of_int8_ceiling", f.prefill_tps / c.prefill_int8);
    num("aggregate_ceiling_tps", c.aggregate);
    str("logits", f.q8_logits ? "q8_0" : "f16");
    j += "  \"aggregate\": [";
    for (std::size_t i = 0; i < f.aggregate.size(); ++i) {
        const auto [n, tps] = f.aggregate[i];
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "%s{\"sequences\": %zu, \"tps\": %.6g, \"x_single_stream\": %.4g, "
                      "\"fraction_of_ceiling\": %.4g}",
                      i ? ", " : "", n, tps, tps / f.single_tps, tps / c.aggregate);
        j += buf;
    }
    j += "],\n";
    num("peak_rss_mib", f.peak_rss_mib, true);
    j += "}\n";
    if (FILE* out = std::fopen(path.c_str(), "w")) {
        std::fputs(j.c_str(), out);
        std::fclose(out);
    } else {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
    }
}
