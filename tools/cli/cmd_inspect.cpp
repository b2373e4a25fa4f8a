// `bitnet-cli inspect` and `bitnet-cli verify`.
#include "commands.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/model_config.hpp"
#include "model/gguf/gguf_reader.hpp"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

namespace bitnet::cli {
namespace {

std::string human_bytes(std::uint64_t n) {
    char buf[32];
    if (n >= (1ull << 30))
        std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1ull << 30));
    else if (n >= (1ull << 20))
        std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(n) / (1ull << 20));
    else if (n >= 1024)
        std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
    else
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
    return buf;
}

void print_tokenizer(const model::gguf_file& f) {
    auto kind = f.get_string("tokenizer.ggml.model");
    if (!kind) {
        std::cout << "tokenizer: none\n";
        return;
    }
    auto pre = f.get_string("tokenizer.ggml.pre");
    const auto* tokens = f.find("tokenizer.ggml.tokens");
    const auto* merges = f.find("tokenizer.ggml.merges");
    std::cout << "tokenizer: " << *kind << ", pre-tokenizer "
              << (pre ? std::string(*pre) : std::string("(absent: DEFAULT)")) << ", "
              << (tokens ? tokens->array_count : 0) << " tokens";
    if (merges)
        std::cout << ", " << merges->array_count << " merges";
    for (const char* id : {"bos", "eos", "eot", "unknown", "padding"}) {
        if (auto v = f.get_uint(std::string("tokenizer.ggml.") + id + "_token_id"))
            std::cout << ", " << id << " " << *v;
    }
    if (auto b = f.get_bool("tokenizer.ggml.add_bos_token"))
        std::cout << ", add_bos " << (*b ? "true" : "false");
    std::cout << "\n";
}

// Loads the engine (repacking every weight) and prints the family each op runs and the times that
// chose it: the same choice a server makes when it loads this file on this machine.
void print_kernel_choice(const std::string& path, int threads) {
    model::engine_options opt;
    opt.model_path = path;
    opt.n_threads = threads;
    opt.kv_budget_bytes = 64ull << 20; // a few blocks: only the weights matter here
    opt.kv_block_tokens = 16;
    auto e = model::engine::load(opt);
    if (!e) {
        std::cout << "kernels: not chosen (the engine did not load: " << e.error().message << ")\n";
        return;
    }
    std::cout << "kernels (" << (threads > 0 ? std::to_string(threads) : std::string("all"))
              << " threads):\n";
    for (const auto& c : (*e)->kernel_choices()) {
        std::printf("  %-16s %-12s %s", c.op.c_str(), c.family.c_str(), c.source.c_str());
        if (!c.timings.empty()) {
            std::printf(" timed on %u tokens:", c.tokens);
            for (const auto& t : c.timings)
                std::printf(" %s %.1f us", t.family.c_str(), t.micros);
        }
        std::printf("\n");
    }
}

int run_inspect(const std::string& path, bool kernels, int threads) {
    auto f = model::gguf_file::open(path);
    if (!f) {
        std::cerr << "error: " << f.error().message << "\n";
        return 1;
    }
    std::cout << "file: " << path << " (" << human_bytes(f->file_size()) << ", GGUF v"
              << f->version() << ", alignment " << f->alignment() << ", " << f->metadata().size()
              << " metadata keys, " << f->tensors().size() << " tensors)\n";
    if (auto c = model::read_model_config(*f)) {
        std::cout << "architecture: " << c->arch_name << " (" << model::architecture_name(c->arch)
                  << " graph: "
                  << (c->activation == model::ffn_activation::relu_sqr ? "ReLU²" : "SiLU")
                  << " FFN, " << (c->rope == model::rope_style::neox ? "NEOX" : "NORM") << " RoPE, "
                  << (c->has_sub_norms ? "sub-norms, " : "")
                  << (c->tied_output ? "tied logits" : "separate output") << ")\n"
                  << "  n_vocab " << c->n_vocab << ", n_ctx_train " << c->n_ctx_train << ", n_embd "
                  << c->n_embd << ", n_layer " << c->n_layer << ", n_ff " << c->n_ff << "\n"
                  << "  n_head " << c->n_head << ", n_head_kv " << c->n_head_kv << ", head_dim "
                  << c->head_dim << ", rope base " << c->rope_base << ", rms eps " << c->rms_eps
                  << ", file_type " << c->file_type << "\n";
    } else {
        std::cout << "architecture: unusable (" << c.error().message << ")\n";
    }
    print_tokenizer(*f);

    std::cout << "tensors:\n";
    std::uint64_t total = 0, params = 0;
    for (const auto& t : f->tensors()) {
        std::string shape;
        for (std::uint32_t d = 0; d < t.n_dims; ++d)
            shape += (d ? " x " : "") + std::to_string(t.ne[d]);
        std::printf("  %-32.*s %-6.*s %-16s %12s  @%llu\n", static_cast<int>(t.name.size()),
                    t.name.data(), static_cast<int>(model::ggml_type_name(t.type).size()),
                    model::ggml_type_name(t.type).data(), shape.c_str(),
                    human_bytes(t.n_bytes).c_str(),
                    static_cast<unsigned long long>(f->data_offset() + t.offset));
        total += t.n_bytes;
        params += t.n_elements();
    }
    std::cout << "total: " << params << " parameters, " << human_bytes(total)
              << " of tensor data\n";
    if (kernels) {
        std::cout.flush();
        print_kernel_choice(path, threads);
    }
    return 0;
}

int run_verify(const std::string& path) {
    auto f = model::gguf_file::open(path);
    if (!f) {
        std::cerr << f.error().message << "\n";
        return 1;
    }
    const auto violations = model::verify_model(*f);
    for (const auto& v : violations)
        std::cerr << v << "\n";
    if (violations.empty())
        std::cout << path << ": valid\n";
    return violations.empty() ? 0 : 1;
}

} // namespace

void add_inspect(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("inspect", "print architecture, tensors and tokenizer of a GGUF");
    struct inspect_args {
        std::string path;
        bool kernels = false;
        int threads = 0;
    };
    auto a = std::make_shared<inspect_args>();
    cmd->add_option("file", a->path, "GGUF model file")->required();
    cmd->add_flag("--kernels", a->kernels,
                  "load the model and time every kernel family on its shapes: the family each op "
                  "would run on this machine");
    cmd->add_option("--threads", a->threads, "threads for --kernels (0 = one per core)")
        ->check(CLI::Range(0, 1024));
    cmd->callback([a] { throw CLI::RuntimeError(run_inspect(a->path, a->kernels, a->threads)); });
}

void add_verify(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("verify", "check a GGUF against its architecture; exit 1 if not");
    auto path = std::make_shared<std::string>();
    cmd->add_option("file", *path, "GGUF model file")->required();
    cmd->callback([path] { throw CLI::RuntimeError(run_verify(*path)); });
}

} // namespace bitnet::cli
