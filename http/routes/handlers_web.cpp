// GET / and GET /ui/NAME: the web page of http/ui/ and its files, each with the page's security
// headers. Browsers ask for HTML; any other client at / (a probe, a script, curl) gets a line of
// text saying the server runs, so a check of the root never parses a page.
#include "http/routes/session.hpp"
#include "http/transport/request_errors.hpp"
#include "http/ui/web_assets.hpp"

#include <boost/beast/core/string.hpp>

namespace bitnet::http {

namespace bhttp = boost::beast::http;

namespace {

/// Whether the Accept header lists text/html (what a browser's navigation sends).
bool wants_html(std::string_view accept) {
    for (std::size_t at = 0; at < accept.size();) {
        auto end = accept.find(',', at);
        if (end == std::string_view::npos)
            end = accept.size();
        auto type = accept.substr(at, end - at);
        type = type.substr(0, type.find(';'));
        while (!type.empty() && (type.front() == ' ' || type.front() == '\t'))
            type.remove_prefix(1);
        while (!type.empty() && (type.back() == ' ' || type.back() == '\t'))
            type.remove_suffix(1);
        if (boost::beast::iequals(type, "text/html"))
            return true;
        at = end + 1;
    }
    return false;
}

} // namespace

void session::do_web_page(const std::string& route, const request& req) {
    if (!wants_html(req[bhttp::field::accept])) {
        res_ = {bhttp::status::ok, 11};
        res_.set(bhttp::field::content_type, "text/plain; charset=utf-8");
        res_.body() = "bitnet-serve is running\n";
        return write_response(route, false);
    }
    if (!srv_.opt.web_ui)
        return send_error(route, status_error(404, "the web page is off on this server (web_ui 0)"),
                          "-");
    send_web_file(route, ui::page());
}

void session::do_web_asset(const std::string& route, const std::string& name) {
    const auto asset = srv_.opt.web_ui ? ui::find_asset(name) : std::nullopt;
    if (!asset)
        return send_error(route, status_error(404, "no route /ui/" + name.substr(0, 64)), "-");
    send_web_file(route, *asset);
}

void session::send_web_file(const std::string& route, const ui::web_asset& file) {
    res_ = {bhttp::status::ok, 11};
    res_.set(bhttp::field::content_type, file.content_type);
    for (const auto& [name, value] : ui::security_headers())
        res_.set(name, value);
    res_.body() = std::string(file.bytes);
    write_response(route, false);
}

} // namespace bitnet::http
