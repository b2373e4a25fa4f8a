// `bitnet-cli generate -m FILE -p TEXT [-n N --temp T --seed S --threads T]`: one sequence through
// the engine's step API (the prompt as one chunk, then one token per step), text streamed to
// stdout as whole UTF-8 characters, then prompt and generation tokens/s on stderr. `--prompt-ids`
// takes the prompt as ids (no BOS added); `--json` prints one object instead:
// {"ids":[...],"text":...,"prompt_tokens_per_s":...,"gen_tokens_per_s":...}.
#include "commands.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/placement/generation.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

namespace bitnet::cli {
namespace {

struct generate_args {
    std::string model;
    std::string prompt;
    std::string prompt_ids;
    int n_predict = 64;
    float temperature = 0.0f;
    int top_k = 0;
    float top_p = 1.0f;
    std::uint64_t seed = 0;
    int threads = 0;
    bool json = false;
    bool ignore_eos = false;
    std::string tl_kernel_config;
    bool q8_logits = false;
};

/// "1,2,3" → ids; nullopt names nothing, the caller reports.
std::optional<std::vector<std::int32_t>> parse_ids(const std::string& s) {
    std::vector<std::int32_t> ids;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        try {
            std::size_t used = 0;
            const long v = std::stol(item, &used);
            if (used != item.size() || v < 0 || v > INT32_MAX)
                return std::nullopt;
            ids.push_back(static_cast<std::int32_t>(v));
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }
    if (ids.empty())
        return std::nullopt;
    return ids;
}

double per_second(std::size_t n, std::chrono::steady_clock::duration d) {
    const double s = std::chrono::duration<double>(d).count();
    return s > 0 ? static_cast<double>(n) / s : 0.0;
}

int run_generate(const generate_args& a) {
    if (a.prompt.empty() == a.prompt_ids.empty()) {
        std::cerr << "give exactly one of -p/--prompt and --prompt-ids\n";
        return 2;
    }
    model::engine_options opt;
    opt.model_path = a.model;
    opt.n_threads = a.threads;
    opt.tl_kernel_config = a.tl_kernel_config;
    opt.q8_logits = a.q8_logits;
    auto loaded = model::engine::load(opt);
    if (!loaded) {
        std::cerr << loaded.error() << "\n";
        return 1;
    }
    model::engine& eng = **loaded;
    const model::tokenizer& tok = eng.vocab();
    std::vector<std::int32_t> prompt;
    if (!a.prompt_ids.empty()) {
        auto ids = parse_ids(a.prompt_ids);
        if (!ids) {
            std::cerr << "--prompt-ids: expected comma-separated non-negative integers\n";
            return 2;
        }
        prompt = std::move(*ids);
    } else {
        auto ids = tok.encode(a.prompt, {.add_bos = tok.add_bos()});
        if (!ids) {
            std::cerr << ids.error() << "\n";
            return 1;
        }
        prompt = std::move(*ids);
    }
    model::generation_request req;
    req.prompt = prompt;
    req.sampling.temperature = a.temperature;
    req.sampling.top_k = a.top_k;
    req.sampling.top_p = a.top_p;
    req.sampling.seed = a.seed;
    req.stop.max_tokens = static_cast<std::uint32_t>(a.n_predict);
    req.ignore_eog = a.ignore_eos;
    auto gen = model::generation::start(eng, 1, std::move(req));
    if (!gen) {
        std::cerr << gen.error() << "\n";
        return 1;
    }
    if (!a.json)
        std::fprintf(stderr, "%s\n", eng.describe().c_str());

    std::vector<std::int32_t> generated;
    std::string text;
    using clock = std::chrono::steady_clock;
    clock::duration prompt_time{};
    clock::duration gen_time{};
    while (a.n_predict > 0 && !gen->finished()) {
        const auto t0 = clock::now();
        auto next = gen->next();
        (gen->generated().size() <= 1 ? prompt_time : gen_time) += clock::now() - t0;
        if (!next) {
            std::cerr << next.error() << "\n";
            return 1;
        }
        if (next->finish != model::finish_reason::eog)
            generated.push_back(next->token);
        text += next->text;
        if (!a.json) {
            std::fwrite(next->text.data(), 1, next->text.size(), stdout);
            std::fflush(stdout);
        }
    }
    // The first step is the prompt's; the others are one decode token each, the last one's
    // logits unused only when the loop ended on the token budget.
    const double prompt_tps = per_second(prompt.size(), prompt_time);
    const std::size_t n_decode_steps = generated.empty() ? 0 : generated.size() - 1;
    const double gen_tps = per_second(n_decode_steps, gen_time);
    if (a.json) {
        namespace json = boost::json;
        json::object o;
        o["ids"] = json::array(generated.begin(), generated.end());
        o["text"] = text;
        o["prompt_tokens_per_s"] = prompt_tps;
        o["gen_tokens_per_s"] = gen_tps;
        std::cout << json::serialize(o) << "\n";
    } else {
        std::printf("\n");
        std::fprintf(stderr,
                     "prompt: %zu tokens, %.2f tokens/s; generation: %zu tokens, %.2f tokens/s\n",
                     prompt.size(), prompt_tps, generated.size(), gen_tps);
    }
    return 0;
}

} // namespace

void add_generate(CLI::App& app) {
    auto args = std::make_shared<generate_args>();
    CLI::App* g = app.add_subcommand("generate", "Generate text with a model");
    g->add_option("-m,--model", args->model, "GGUF model file")->required();
    g->add_option("-p,--prompt", args->prompt, "prompt text (BOS added if the model wants it)");
    g->add_option("--prompt-ids", args->prompt_ids, "prompt as comma-separated token ids, no BOS");
    g->add_option("-n,--n-predict", args->n_predict, "tokens to generate")
        ->check(CLI::Range(0, 1 << 20));
    g->add_option("--temp", args->temperature, "temperature; 0 = greedy (default)");
    g->add_option("--top-k", args->top_k, "top-k filter; 0 = off");
    g->add_option("--top-p", args->top_p, "top-p filter; 1 = off");
    g->add_option("--seed", args->seed, "sampler seed");
    g->add_option("-t,--threads", args->threads, "compute threads; 0 = one per core")
        ->check(CLI::Range(0, 1024));
    g->add_flag("--ignore-eos", args->ignore_eos, "keep generating past end-of-generation tokens");
    g->add_option("--tl-kernel-config", args->tl_kernel_config,
                  "bitnet.cpp kernel_config.ini giving TL1/TL2 layouts of unlisted shapes");
    g->add_flag("--q8-logits", args->q8_logits,
                "Q8_0 logits (32-value int8 blocks, F16 scales): 34/64 of the logits bytes, "
                "a small measured accuracy loss (bench/RESULTS.md)");
    g->add_flag("--json", args->json, "print one JSON object with ids, text and speeds");
    g->callback([args] { throw CLI::RuntimeError(run_generate(*args)); });
}

} // namespace bitnet::cli
