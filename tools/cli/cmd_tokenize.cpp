// `bitnet-cli tokenize -m FILE --jsonl [--bos]` and `bitnet-cli detokenize -m FILE --jsonl`: one
// JSON object per input line, in order. A line that is not the expected JSON gets an
// {"error": ...} line in its place, so a script can match outputs to inputs one for one; the exit
// status is then 1.
#include "cli_model.hpp"
#include "commands.hpp"

#include <boost/json.hpp>

#include <iostream>
#include <string>

namespace bitnet::cli {
namespace {

namespace json = boost::json;

struct tokenize_args {
    std::string model;
    bool jsonl = false;
    bool bos = false;
    bool special = false;
};

std::string error_line(const std::string& what) {
    return json::serialize(json::object{{"error", what}});
}

int run_tokenize(const tokenize_args& a) {
    auto tok = open_tokenizer(a.model);
    if (!tok)
        return 1;
    int status = 0;
    std::string line;
    std::vector<std::int32_t> ids;
    while (std::getline(std::cin, line)) {
        boost::system::error_code ec;
        const json::value v = json::parse(line, ec);
        const json::string* text = nullptr;
        if (!ec && v.is_object())
            if (const json::value* t = v.as_object().if_contains("text"); t && t->is_string())
                text = &t->as_string();
        if (text == nullptr) {
            std::cout << error_line("expected a JSON object with a string \"text\"") << "\n";
            status = 1;
            continue;
        }
        ids.clear();
        auto r =
            tok->encode_into(std::string_view(text->data(), text->size()),
                             {.add_bos = a.bos, .add_eos = false, .parse_special = a.special}, ids);
        if (!r) {
            std::cout << error_line(r.error().to_string()) << "\n";
            status = 1;
            continue;
        }
        json::array arr(ids.begin(), ids.end());
        std::cout << json::serialize(json::object{{"ids", std::move(arr)}}) << "\n";
    }
    return status;
}

int run_detokenize(const tokenize_args& a) {
    auto tok = open_tokenizer(a.model);
    if (!tok)
        return 1;
    int status = 0;
    std::string line;
    while (std::getline(std::cin, line)) {
        boost::system::error_code ec;
        const json::value v = json::parse(line, ec);
        const json::array* arr = nullptr;
        if (!ec && v.is_object())
            if (const json::value* t = v.as_object().if_contains("ids"); t && t->is_array())
                arr = &t->as_array();
        std::vector<std::int32_t> ids;
        bool ok = arr != nullptr;
        if (ok) {
            for (const json::value& id : *arr) {
                if (!id.is_int64() || id.as_int64() < 0 || id.as_int64() >= tok->n_vocab()) {
                    ok = false;
                    break;
                }
                ids.push_back(static_cast<std::int32_t>(id.as_int64()));
            }
        }
        if (!ok) {
            std::cout << error_line("expected a JSON object with \"ids\": an array of token ids "
                                    "in [0, " +
                                    std::to_string(tok->n_vocab()) + ")")
                      << "\n";
            status = 1;
            continue;
        }
        std::cout << json::serialize(json::object{{"text", tok->decode(ids)}}) << "\n";
    }
    return status;
}

} // namespace

void add_tokenize(CLI::App& app) {
    auto args = std::make_shared<tokenize_args>();
    CLI::App* tk = app.add_subcommand("tokenize", "Text to token ids, one JSON line each");
    tk->add_option("-m,--model", args->model, "GGUF model file")->required();
    tk->add_flag("--jsonl", args->jsonl, "read {\"text\"} lines on stdin, write {\"ids\"} lines")
        ->required();
    tk->add_flag("--bos", args->bos, "prepend the model's BOS token");
    tk->add_flag("--special", args->special, "recognise control tokens written in the text");
    tk->callback([args] { throw CLI::RuntimeError(run_tokenize(*args)); });

    CLI::App* dt = app.add_subcommand("detokenize", "Token ids to text, one JSON line each");
    dt->add_option("-m,--model", args->model, "GGUF model file")->required();
    dt->add_flag("--jsonl", args->jsonl, "read {\"ids\"} lines on stdin, write {\"text\"} lines")
        ->required();
    dt->callback([args] { throw CLI::RuntimeError(run_detokenize(*args)); });
}

} // namespace bitnet::cli
