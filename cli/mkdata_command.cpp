// `loaderlens mkdata` (being written)
#include "commands.hpp"
namespace loaderlens::cli {
Runner add_mkdata(CLI::App& app) {
    app.add_subcommand("mkdata", "generate a dataset (being written)");
    return [] { return exit_internal; };
}
} // namespace loaderlens::cli
