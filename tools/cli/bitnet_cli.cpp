// bitnet-cli: inspect, verify, tokenize and generate with a GGUF model. Each subcommand lives in
// its own cmd_*.cpp; its callback ends by throwing CLI::RuntimeError(exit status).
#include "commands.hpp"

int main(int argc, char** argv) {
    CLI::App app{"bitnet-cli: tools for BitNet b1.58 GGUF models"};
    app.require_subcommand(1);
    bitnet::cli::add_inspect(app);
    bitnet::cli::add_verify(app);
    bitnet::cli::add_tokenize(app);
    bitnet::cli::add_generate(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::RuntimeError& e) {
        return e.get_exit_code();
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    return 0;
}
