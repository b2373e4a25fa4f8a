// The official JSON Schema Test Suite (Debian's json-schema-test-suite package, draft 7: the
// draft of `definitions` refs, which our compiler takes like 2020-12's `$defs`) against the
// compiled automaton. Every instance is written in the canonical layout, tokenized by a real
// tokenizer, and its tokens' bytes walked through the matcher: valid instances must be accepted,
// invalid ones refused. A case whose schema uses a keyword we refuse is skipped and counted with
// that keyword, never passed. The per-file counts are printed (and recorded in the README).
#include "model/constrain/canonical_json.hpp"
#include "model/constrain/token_constraint.hpp"
#include "vocab_fixtures.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

using namespace bitnet;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

const fs::path suite_dir = "/usr/share/json-schema-test-suite/tests/draft7";

struct counts {
    int valid_accepted = 0;
    int invalid_rejected = 0;
    int wrong = 0;
    int skipped = 0;
    std::set<std::string> skipped_for;
};

std::map<std::string, counts> run_suite(const model::tokenizer& tok) {
    REQUIRE_MESSAGE(fs::is_directory(suite_dir), "the JSON Schema Test Suite is missing ("
                                                     << suite_dir.string()
                                                     << "): run deploy/install-deps.sh, "
                                                        "which installs Debian's "
                                                        "json-schema-test-suite");
    std::map<std::string, counts> out;
    for (const auto& entry : fs::directory_iterator(suite_dir)) {
        if (entry.path().extension() != ".json")
            continue;
        const auto name = entry.path().stem().string();
        std::ifstream in(entry.path());
        std::stringstream ss;
        ss << in.rdbuf();
        const auto groups = json::parse(ss.str()).as_array();
        auto& c = out[name];
        for (const auto& gv : groups) {
            const auto& group = gv.as_object();
            const auto& tests = group.at("tests").as_array();
            auto compiled = model::constrain::schema_cache::shared().get(
                json::serialize(group.at("schema")), tok);
            if (!compiled && compiled.error().message.find("admits no") != std::string::npos) {
                // A schema that admits no value is refused as a request (400): that refuses
                // every instance, which is right only when every instance is invalid.
                for (const auto& tv : tests) {
                    const bool valid = tv.as_object().at("valid").as_bool();
                    CHECK_MESSAGE(!valid, name << ": " << group.at("description").as_string()
                                               << " was refused as admitting no value");
                    ++(valid ? c.wrong : c.invalid_rejected);
                }
                continue;
            }
            if (!compiled) {
                // Refused: counted, with the keyword (or the reason) it was refused for.
                c.skipped += static_cast<int>(tests.size());
                c.skipped_for.insert(compiled.error().param.empty() ? compiled.error().message
                                                                    : compiled.error().param);
                continue;
            }
            for (const auto& tv : tests) {
                const auto& t = tv.as_object();
                const bool valid = t.at("valid").as_bool();
                const auto text = model::constrain::canonical_json(t.at("data"));
                auto ids = tok.encode(text);
                REQUIRE(ids);
                REQUIRE(tok.decode(*ids) == text);
                model::constrain::token_constraint tc(*compiled);
                bool ok = true;
                for (auto id : *ids)
                    if (!(ok = tc.accept(id)))
                        break;
                const bool accepted = ok && tc.complete();
                CHECK_MESSAGE(accepted == valid, name << ": " << group.at("description").as_string()
                                                      << " / " << t.at("description").as_string()
                                                      << ": " << text);
                if (accepted != valid)
                    ++c.wrong;
                else if (valid)
                    ++c.valid_accepted;
                else
                    ++c.invalid_rejected;
            }
        }
    }
    return out;
}

void print(const std::string& tokenizer_name, const std::map<std::string, counts>& all) {
    std::cout << "JSON Schema Test Suite (draft7) through the " << tokenizer_name
              << " tokenizer:\n| keyword file | valid accepted | invalid rejected | wrong | "
                 "skipped | skipped for |\n|---|---|---|---|---|---|\n";
    counts total;
    for (const auto& [name, c] : all) {
        std::string why;
        for (const auto& s : c.skipped_for)
            why += (why.empty() ? "" : ", ") + s;
        std::cout << "| " << name << " | " << c.valid_accepted << " | " << c.invalid_rejected
                  << " | " << c.wrong << " | " << c.skipped << " | " << why << " |\n";
        total.valid_accepted += c.valid_accepted;
        total.invalid_rejected += c.invalid_rejected;
        total.wrong += c.wrong;
        total.skipped += c.skipped;
    }
    std::cout << "| total | " << total.valid_accepted << " | " << total.invalid_rejected << " | "
              << total.wrong << " | " << total.skipped << " | |\n";
}

/// Runs the suite through `tok`, prints its table, and checks that it really ran.
void run_and_report(const model::tokenizer& tok, const std::string& name) {
    const auto all = run_suite(tok);
    print(name, all);
    int checked = 0;
    for (const auto& [file, c] : all)
        checked += c.valid_accepted + c.invalid_rejected;
    CHECK(checked >= 150); // the suite really ran (Debian 12: 206 supported of 423)
}

} // namespace

TEST_CASE("schema suite: the default model's tokenizer, accepted exactly the valid instances") {
    run_and_report(test::default_tokenizer(), "default model's 4096-token BPE");
}

TEST_CASE("schema suite: the Llama-3 tokenizer, accepted exactly the valid instances") {
    run_and_report(test::llama3_tokenizer(), "Llama-3");
}
