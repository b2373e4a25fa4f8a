// Reads the default model's held-out slice with Boost.JSON.
#include "support/default_model_slice.hpp"

#include "support/test_data.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

namespace bitnet::test {

namespace json = boost::json;

std::string default_model_path() {
    return data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");
}

default_model_slice load_default_model_slice() {
    const auto bytes = read_file(data_path("default_model/heldout_slice.json"));
    REQUIRE_MESSAGE(!bytes.empty(), "default_model/heldout_slice.json is missing");
    boost::system::error_code ec;
    const json::value root = json::parse(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), ec);
    REQUIRE_MESSAGE(!ec, "heldout_slice.json: " << ec.message());
    const json::object& o = root.as_object();
    default_model_slice s;
    s.n_ctx = static_cast<std::size_t>(o.at("n_ctx").as_int64());
    for (const json::value& wv : o.at("windows").as_array()) {
        default_model_window w;
        for (const json::value& d : wv.at("documents").as_array())
            w.documents.emplace_back(d.as_string());
        for (const json::value& t : wv.at("tokens").as_array())
            w.tokens.push_back(static_cast<std::int32_t>(t.as_int64()));
        s.windows.push_back(std::move(w));
    }
    for (const json::value& cv : o.at("tokenizer_cases").as_array()) {
        tokenizer_case c;
        c.text = std::string(cv.at("text").as_string());
        for (const json::value& t : cv.at("ids").as_array())
            c.ids.push_back(static_cast<std::int32_t>(t.as_int64()));
        s.tokenizer_cases.push_back(std::move(c));
    }
    const json::object& pt = o.at("pytorch").as_object();
    s.pytorch_perplexity = pt.at("perplexity").to_number<double>();
    s.pytorch_tokens_predicted = static_cast<std::size_t>(pt.at("tokens_predicted").as_int64());
    REQUIRE(!s.windows.empty());
    return s;
}

double token_nll(std::span<const float> logits, std::int32_t target) {
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits)
        sum += std::exp(static_cast<double>(l) - mx);
    return -(static_cast<double>(logits[static_cast<std::size_t>(target)]) - mx - std::log(sum));
}

} // namespace bitnet::test
