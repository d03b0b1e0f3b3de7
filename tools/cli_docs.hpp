#pragma once
// The man page and the shell completions, generated from the CLI's definition (its subcommands and options,
// walked in the CLI11 app) and from the operation registry, so that neither can fall behind the program.
// `apron completion bash|zsh` prints a completion script; the build writes apron.1, apron.bash and _apron
// with them, and `cmake --install` puts them where man, bash-completion and zsh look.
#include <string>

#include <CLI/CLI.hpp>

std::string man_page(const CLI::App& app, const std::string& version);
std::string bash_completion(const CLI::App& app);
std::string zsh_completion(const CLI::App& app);
