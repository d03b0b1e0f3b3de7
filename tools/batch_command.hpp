#pragma once
// `apron batch` on the command line: its options and the run (batch_command.cpp).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli_options.hpp"

struct BatchArgs {
    CLI::App* command = nullptr;
    CLI::Option* quality_option = nullptr;  // given or not: --quality is refused for a format other than JPEG
    std::vector<std::string> inputs, ops;
    std::string output_dir, pipeline_file, inputs_as = "auto", pattern = "{stem}.{ext}", format;
    std::string out_type, backend = "auto", algo = "auto", devices;
    std::string memory, byte_order = "big", job_bits32 = "int", jpeg_decode = "auto";
    int streams = 4, io_threads = 0, threads = 0, quality = 95;
    std::string metadata = "keep";
    bool auto_orient = false;
    long long max_pixels = 1LL << 30;
    bool resume = false, quiet = false, dry_run = false;
};

void add_batch_command(CLI::App& app, BatchArgs& args);
// The exit status: 0 all done, 5 when some images failed (each reported), 1 for an error that stopped the
// batch before it ran.
int run_batch_command(const BatchArgs& args, int argc, char** argv);
