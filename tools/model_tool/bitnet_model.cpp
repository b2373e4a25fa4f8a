// bitnet-model: makes synthetic models in bitnet.cpp's layout (`make`) and imports trained float
// weights into I2_S GGUF (`import`).
#include "tools/model_import.hpp"
#include "tools/model_synth.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>

using namespace bitnet;

namespace {

/// The byte-level vocabulary's first reserved tokens renamed to `texts`, typed user-defined (as
/// Qwen2.5's <tool_call>: one token, rendered as its text): a test model with a template's
/// markers as single tokens.
bool set_user_tokens(tools::synth_tokenizer& t, const std::vector<std::string>& texts) {
    model::gguf_value* tokens = nullptr;
    model::gguf_value* types = nullptr;
    for (auto& [key, value] : t.kvs) {
        if (key == "tokenizer.ggml.tokens")
            tokens = &value;
        else if (key == "tokenizer.ggml.token_type")
            types = &value;
    }
    std::size_t slot = 0;
    while (tokens && slot < tokens->array_strings.size() &&
           !tokens->array_strings[slot].starts_with("<|reserved_special_token_"))
        ++slot;
    if (!tokens || !types || slot + texts.size() > tokens->array_strings.size() ||
        types->array_ints.size() != tokens->array_strings.size()) {
        std::cerr << "error: --user-token needs the byte-level tokenizer (no --tokenizer) with "
                     "enough reserved tokens\n";
        return false;
    }
    for (const auto& text : texts) {
        if (text.empty()) {
            std::cerr << "error: --user-token takes a non-empty text\n";
            return false;
        }
        tokens->array_strings[slot] = text;
        types->array_ints[slot] = 4; // GGUF's USER_DEFINED
        ++slot;
    }
    return true;
}

int run_make(const std::string& arch, const std::string& shape_name, const std::string& format,
             const std::string& tokenizer_json, std::uint64_t seed, bool nan_norm,
             std::uint32_t vocab, const std::string& chat_template,
             const std::vector<std::string>& user_tokens, const std::string& out) {
    auto shape = tools::find_shape(shape_name);
    if (!shape) {
        std::cerr << "error: " << shape.error().message << "\n";
        return 2;
    }
    // Another vocabulary size for the byte-level tokenizer: a smaller shape with a larger
    // shape's vocabulary is a draft model for it.
    if (vocab != 0) {
        if (!tokenizer_json.empty() || vocab < 512) {
            std::cerr << "error: --vocab needs the byte-level tokenizer (no --tokenizer) and at "
                         "least 512 tokens\n";
            return 2;
        }
        shape->n_vocab = vocab;
    }
    tools::synth_options opt;
    opt.arch = arch;
    opt.format = format;
    opt.shape = *shape;
    opt.seed = seed;
    opt.nan_output_norm = nan_norm;
    if (tokenizer_json.empty()) {
        opt.tokenizer = tools::byte_level_tokenizer(shape->n_vocab);
    } else {
        auto t = tools::tokenizer_from_hf_json(tokenizer_json);
        if (!t) {
            std::cerr << "error: " << t.error().message << "\n";
            return 1;
        }
        opt.tokenizer = std::move(*t);
    }
    if (!user_tokens.empty() && !set_user_tokens(opt.tokenizer, user_tokens))
        return 2;
    if (!chat_template.empty()) {
        std::ifstream in(chat_template, std::ios::binary);
        if (!in) {
            std::cerr << "error: cannot open the chat template " << chat_template << "\n";
            return 1;
        }
        const std::string text{std::istreambuf_iterator<char>(in), {}};
        auto& kvs = opt.tokenizer.kvs;
        std::erase_if(kvs, [](const auto& kv) { return kv.first == "tokenizer.chat_template"; });
        kvs.emplace_back("tokenizer.chat_template", model::gguf_value::string(text));
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tools::write_synthetic_model(opt, out);
    if (!r) {
        std::cerr << "error: " << r.error().message << "\n";
        return 1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << "wrote " << out << " (" << arch << ", " << shape_name << ", " << format
              << ", vocab " << opt.tokenizer.n_vocab << ") in " << s << " s\n";
    return 0;
}

int run_import(const tools::import_options& opt) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tools::import_float_model(opt);
    if (!r) {
        std::cerr << "error: " << r.error().message << "\n";
        return 1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << "wrote " << opt.output_path << " (I2_S) in " << s << " s\n";
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"bitnet-model: make synthetic BitNet b1.58 models, import trained ones"};
    app.require_subcommand(1);
    auto* make = app.add_subcommand("make", "write a synthetic model with random ternary weights");
    std::string arch = "bitnet-b1.58", shape = "tiny", format = "i2_s", tokenizer, out;
    std::uint64_t seed = 1;
    make->add_option("--arch", arch, "bitnet-b1.58 | bitnet-25 | bitnet | llama")
        ->capture_default_str();
    make->add_option("--shape", shape, "tiny | small | 2b4t")->capture_default_str();
    make->add_option("--format", format, "i2_s | f32")->capture_default_str();
    make->add_option("--tokenizer", tokenizer, "Hugging Face tokenizer.json to embed");
    make->add_option("--seed", seed, "random seed")->capture_default_str();
    make->add_option("-o,--output", out, "output GGUF path")->required();
    std::uint32_t vocab = 0;
    make->add_option("--vocab", vocab,
                     "vocabulary size of the byte-level tokenizer (default: the shape's); the "
                     "same size makes the same vocabulary, so a small shape can draft for 2b4t");
    std::string chat_template;
    make->add_option("--chat-template", chat_template,
                     "a Jinja file written as the model's tokenizer.chat_template");
    std::vector<std::string> user_tokens;
    make->add_option("--user-token", user_tokens,
                     "rename the byte-level vocabulary's next reserved token to this text, a "
                     "user-defined token (e.g. <tool_call>); repeatable");
    bool nan_norm = false;
    make->add_flag("--nan-output-norm", nan_norm,
                   "fill output_norm.weight with NaN: valid structure, never-finite logits "
                   "(for tests of the server's warm-up check)");
    int rc = 0;
    make->callback([&] {
        rc = run_make(arch, shape, format, tokenizer, seed, nan_norm, vocab, chat_template,
                      user_tokens, out);
    });

    auto* import = app.add_subcommand(
        "import", "ternarize trained float weights (tools/train/export.py) into an I2_S GGUF");
    tools::import_options iopt;
    import->add_option("manifest", iopt.manifest_path, "manifest.json of the float export")
        ->required();
    import->add_option("--tokenizer", iopt.tokenizer_path,
                       "tokenizer.json (default: the one the manifest names)");
    import->add_option("-o,--output", iopt.output_path, "output GGUF path")->required();
    import->callback([&] { rc = run_import(iopt);
});
CLI11_PARSE(app, argc, argv);
return rc;
}
