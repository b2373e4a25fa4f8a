// Byte-level BPE on handcrafted vocabularies: the merge rule (rank order, leftmost on ties), the
// pre-tokenizers (DEFAULT, llama-bpe), ignore_merges, byte fallback, special tokens, bad vocabs.
#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/tokenizer_pretokenize.hpp"

#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

using ids = std::vector<std::int32_t>;

// GPT-2 stand-ins used below.
const std::string sp = "\xC4\xA0";        // Ġ, byte 0x20
const std::string a_tilde = "\xC3\x83";   // Ã, byte 0xC3
const std::string copyright = "\xC2\xA9"; // ©, byte 0xA9

// tokens: 0 a, 1 b, 2 c, 3 Ġ, 4 ab, 5 bc, 6 abc, 7 aa, 8 ca, 9 Ã, 10 ©, 11 <|eot|>, 12 <x>
tokenizer_vocab small_vocab(std::vector<std::string> merges, std::optional<std::string> pre) {
    tokenizer_vocab v;
    v.model = "gpt2";
    v.pre = std::move(pre);
    v.tokens = {"a",  "b",  "c",     sp,        "ab",      "bc", "abc",
                "aa", "ca", a_tilde, copyright, "<|eot|>", "<x>"};
    v.token_types = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 4};
    v.merges = std::move(merges);
    v.eos_id = 11;
    return v;
}

tokenizer make(tokenizer_vocab v) {
    auto t = tokenizer::create(std::move(v));
    REQUIRE(t);
    return *t;
}

ids enc(const tokenizer& t, std::string_view text, encode_options opt = {}) {
    auto r = t.encode(text, opt);
    REQUIRE(r);
    return *r;
}

std::vector<std::string> split(const std::optional<std::string>& pre, std::string_view text) {
    auto p = internal::pre_tokenizer::create(pre);
    REQUIRE(p);
    std::vector<std::string_view> out, scratch;
    REQUIRE(p->split(text, out, scratch));
    return {out.begin(), out.end()};
}

using strings = std::vector<std::string>;

} // namespace

TEST_CASE("bpe merges the lowest rank first") {
    // "b c" outranks "a b": abc -> a|bc, and no merge joins a with bc.
    auto t = make(small_vocab({"b c", "a b", "ab c"}, "gpt2"));
    CHECK(enc(t, "abc") == ids{0, 5});
    // With "a b" first, ab forms and then "ab c" gives the whole word.
    auto u = make(small_vocab({"a b", "b c", "ab c"}, "gpt2"));
    CHECK(enc(u, "abc") == ids{6});
}

TEST_CASE("bpe merges the leftmost pair when ranks tie") {
    auto t = make(small_vocab({"a a"}, "gpt2"));
    CHECK(enc(t, "aaa") == ids{7, 0});
    CHECK(enc(t, "aaaa") == ids{7, 7});
    CHECK(enc(t, "aaaaa") == ids{7, 7, 0});
}

TEST_CASE("llama-bpe emits a whole pre-token that is a token even without a merge path") {
    // "ca" is a token but no merge makes it.
    auto plain = make(small_vocab({}, "gpt2"));
    CHECK(enc(plain, "ca") == ids{2, 0});
    auto llama = make(small_vocab({}, "llama-bpe"));
    CHECK(enc(llama, "ca") == ids{8});
}

TEST_CASE("bpe falls back to byte tokens for a character that never merges") {
    auto t = make(small_vocab({}, "gpt2"));
    CHECK(enc(t, "\xC3\xA9") == ids{9, 10}); // é = C3 A9, no merge of Ã ©
    CHECK(t.decode(ids{9, 10}) == "\xC3\xA9");
    // A byte with no token at all: an error naming it (there is no <unk>).
    auto r = t.encode("z");
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::tokenizer_error);
    CHECK(r.error().message.find("0x7A") != std::string::npos);
}

TEST_CASE("bpe decodes GPT-2 stand-ins back to bytes") {
    auto t = make(small_vocab({"a b"}, "gpt2"));
    CHECK(enc(t, "ab a") == ids{4, 3, 0});
    CHECK(t.decode(ids{4, 3, 0}) == "ab a");
    CHECK(t.token_to_piece(3) == " ");
    CHECK(t.token_text(3) == sp);
    CHECK(t.decode(ids{-1, 99, 0}) == "a"); // out-of-range ids produce nothing
}

TEST_CASE("control tokens are parsed only with parse_special, user-defined ones always") {
    auto t = make(small_vocab({}, "gpt2"));
    CHECK(enc(t, "a<|eot|>b", {.parse_special = true}) == ids{0, 11, 1});
    auto as_text = t.encode("a<|eot|>");
    REQUIRE_FALSE(as_text); // '<', '|', 'e', ... have no tokens here, so plain text fails
    CHECK(enc(t, "a<x>b") == ids{0, 12, 1});
    CHECK(t.decode(ids{0, 11, 1}) == "ab");
    CHECK(t.decode(ids{0, 11, 1}, {.render_special = true}) == "a<|eot|>b");
    CHECK(t.decode(ids{0, 12}) == "a<x>");
    CHECK(t.is_eog(11));
    CHECK_FALSE(t.is_eog(0));
}

TEST_CASE("BOS and EOS are added only when requested") {
    auto v = small_vocab({}, "gpt2");
    v.bos_id = 12;
    auto t = make(v);
    CHECK(enc(t, "a") == ids{0});
    CHECK(enc(t, "a", {.add_bos = true, .add_eos = true}) == ids{12, 0, 11});
    CHECK_FALSE(t.add_bos()); // gpt2 pre: no BOS by default; llama-bpe would
    auto no_bos = make(small_vocab({}, "llama-bpe"));
    CHECK(no_bos.add_bos());
    auto r = no_bos.encode("a", {.add_bos = true});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("BOS") != std::string::npos);
}

TEST_CASE("the DEFAULT pre-tokenizer splits punctuation runs, then words, then digit runs of 3") {
    const std::optional<std::string> def;
    CHECK(split(def, "Hello, world!") == strings{"Hello", ",", " world", "!"});
    CHECK(split(def, "abc 12345678") == strings{"abc", " ", "123", "456", "78"});
    CHECK(split(def, "a...b") == strings{"a", "...", "b"});
    CHECK(split(def, "$5+3=8") == strings{"$", "5", "+", "3", "=", "8"});
    CHECK(split(def, "x  y") == strings{"x", " ", " y"});
    CHECK(split(def, "it's") == strings{"it", "'", "s"}); // the apostrophe is split out first
    CHECK(split(std::string("default"), "a1") == strings{"a", "1"});
}

TEST_CASE("the llama-bpe pre-tokenizer follows Llama 3's regex") {
    const std::optional<std::string> l3 = "llama-bpe";
    CHECK(split(l3, "1234567") == strings{"123", "456", "7"});
    CHECK(split(l3, "don't") == strings{"don", "'t"});
    CHECK(split(l3, "DON'T") == strings{"DON", "'T"});
    CHECK(split(l3, "  hi") == strings{" ", " hi"});
    CHECK(split(l3, "a\n\n b") == strings{"a", "\n\n", " b"});
    CHECK(split(l3, "x!!\n") == strings{"x", "!!\n"});
    CHECK(split(l3, "\xC3\xA9t\xC3\xA9") == strings{"\xC3\xA9t\xC3\xA9"}); // été is letters
    // Invalid UTF-8 never matches a class; it still comes out, as its own piece.
    CHECK(split(l3, "a\xFF b") == strings{"a", "\xFF", " b"});
}

TEST_CASE("invalid vocabularies are refused with a message naming the problem") {
    auto err = [](tokenizer_vocab v) {
        auto r = tokenizer::create(std::move(v));
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::tokenizer_error);
        return r.error().message;
    };
    tokenizer_vocab empty;
    empty.model = "gpt2";
    CHECK(err(empty).find("no tokens") != std::string::npos);

    auto model = small_vocab({}, "gpt2");
    model.model = "wordpiece";
    CHECK(err(model).find("wordpiece") != std::string::npos);

    CHECK(err(small_vocab({}, "qwen2")).find("qwen2") != std::string::npos);
    CHECK(err(small_vocab({"a z"}, "gpt2")).find("'z'") != std::string::npos);
    CHECK(err(small_vocab({"c c"}, "gpt2")).find("'cc'") != std::string::npos);
    CHECK(err(small_vocab({"ab"}, "gpt2")).find("'left right'") != std::string::npos);

    auto bos = small_vocab({}, "gpt2");
    bos.bos_id = 13;
    CHECK(err(bos).find("bos token id 13") != std::string::npos);

    auto scores = small_vocab({}, "gpt2");
    scores.scores = {1.0f};
    CHECK(err(scores).find("scores") != std::string::npos);

    auto types = small_vocab({}, "gpt2");
    types.token_types[2] = 9;
    CHECK(err(types).find("token_type 9") != std::string::npos);
}

TEST_CASE("one tokenizer encodes from several threads at once with the same results") {
    const auto t = make(small_vocab({"a b", "b c", "ab c", "a a"}, "llama-bpe"));
    const std::vector<std::string> texts = {"abc aab", "aaaa bc", "cab abc ca", "a<x>b"};
    std::vector<ids> expected;
    for (const auto& s : texts)
        expected.push_back(enc(t, s));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w)
        threads.emplace_back([&, w] {
            for (int i = 0; i < 2000; ++i) {
                const std::size_t k = (w + i) % texts.size();
                auto r = t.encode(texts[k]);
                mismatches[w] += !r || *r != expected[k];
            }
        });
    for (auto& th : threads)
        th.join();
    CHECK(mismatches == std::vector<int>(4, 0));
}
