// The web page's files as the binary carries them (http/ui/web_assets.hpp): every file the page
// or a module names is in the table, nothing in them reaches another origin or runs inline, and
// the headers keep scripts to the server's own.
#include "http/ui/web_assets.hpp"

#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>

using bitnet::http::ui::all_assets;
using bitnet::http::ui::find_asset;
using bitnet::http::ui::page;
using bitnet::http::ui::security_headers;

namespace {

/// Every match of group 1 of `re` in `text`.
std::set<std::string> captures(std::string_view text, const std::regex& re) {
    std::set<std::string> out;
    const std::string s(text);
    for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
        out.insert((*it)[1].str());
    return out;
}

} // namespace

TEST_CASE("the page and each file it names are served, under unique names") {
    std::set<std::string_view> names;
    for (const auto& a : all_assets()) {
        CAPTURE(a.name);
        CHECK(!a.bytes.empty());
        CHECK(names.insert(a.name).second);
    }
    CHECK(page().name == "index.html");
    CHECK(page().content_type.substr(0, 9) == "text/html");
    // The page is GET /, not a file under /ui/; a name that is not in the table is nothing.
    CHECK_FALSE(find_asset("index.html"));
    CHECK_FALSE(find_asset("../index.html"));
    CHECK_FALSE(find_asset(""));
    REQUIRE(find_asset("app.js"));
    CHECK(find_asset("app.js")->content_type.substr(0, 15) == "text/javascript");

    const std::regex linked(R"re((?:src|href)="/ui/([^"]+)")re");
    const auto from_page = captures(page().bytes, linked);
    CHECK(from_page.count("app.js") == 1);
    for (const auto& name : from_page) {
        CAPTURE(name);
        CHECK(find_asset(name));
    }
    // Each module's imports are files of the table too (the page loads nothing else).
    const std::regex imported(R"re(from '\./([^']+)')re");
    for (const auto& a : all_assets()) {
        if (a.name.size() < 3 || a.name.substr(a.name.size() - 3) != ".js")
            continue;
        for (const auto& name : captures(a.bytes, imported)) {
            CAPTURE(a.name);
            CAPTURE(name);
            CHECK(find_asset(name));
        }
    }
}

TEST_CASE("no file of the page names another origin, runs inline script or parses markup") {
    for (const auto& a : all_assets()) {
        CAPTURE(a.name);
        const std::string text(a.bytes);
        // The favicon's SVG namespace is a name, not a fetch.
        if (a.name != "favicon.svg") {
            CHECK(text.find("http://") == std::string::npos);
            CHECK(text.find("https://") == std::string::npos);
        }
        CHECK(text.find("//cdn") == std::string::npos);
        // What a user or the model wrote is text: no API that parses a string as markup.
        CHECK(text.find("innerHTML") == std::string::npos);
        CHECK(text.find("outerHTML") == std::string::npos);
        CHECK(text.find("insertAdjacentHTML") == std::string::npos);
        CHECK(text.find("document.write") == std::string::npos);
        CHECK(text.find("eval(") == std::string::npos);
    }
    const std::string html(page().bytes);
    // Every script of the page is a file: none inline, no inline handler, no inline style.
    CHECK(captures(html, std::regex(R"re(<script(?![^>]*\bsrc=)[^>]*>)re")).empty());
    CHECK(captures(html, std::regex(R"re(\s(on[a-z]+)=)re")).empty());
    CHECK(captures(html, std::regex(R"re(\s(style)=)re")).empty());
}

TEST_CASE("the page's headers: scripts only from the server, no framing, no sniffing") {
    std::string csp;
    std::string nosniff;
    for (const auto& [name, value] : security_headers()) {
        if (name == "Content-Security-Policy")
            csp = value;
        if (name == "X-Content-Type-Options")
            nosniff = value;
    }
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK(csp.find("frame-ancestors 'none'") != std::string::npos);
    CHECK(csp.find("connect-src 'self'") != std::string::npos);
    CHECK(csp.find("unsafe-inline") == std::string::npos);
    CHECK(csp.find("unsafe-eval") == std::string::npos);
    CHECK(nosniff == "nosniff");
}
