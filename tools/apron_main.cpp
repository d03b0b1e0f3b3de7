// The apron command line. Subcommands: filter (run operations on an image), ops (the registry's
// operations, parameters, defaults and limits), info (backends, devices, formats).
// Every failure prints one line "apron: <what>: <problem>" and exits non-zero; outputs are written
// atomically, so a failed run never leaves a partial file.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <new>
#include <thread>

#include "apron/devices.hpp"
#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct FilterArgs {
    std::string input, output;
    std::vector<std::string> ops;
    std::string out_type, backend = "auto";
    int threads = 0;
    bool timing = false, plan_only = false;
    std::uint64_t max_pixels = std::uint64_t(1) << 30;
    int quality = 95;
};

void print_timing(const std::vector<apron::StageTiming>& stages) {
    double total = 0;
    for (const auto& s : stages) total += s.milliseconds;
    for (const auto& s : stages) std::fprintf(stderr, "%10.3f ms  %s\n", s.milliseconds, s.stage.c_str());
    std::fprintf(stderr, "%10.3f ms  total\n", total);
}

int run_filter(const FilterArgs& a) {
    apron::RunOptions options;
    options.threads = a.threads;
    if (!a.out_type.empty()) {
        options.out_type = apron::parse_pixel_type(a.out_type);
        if (!options.out_type) throw apron::Error("--out-type: '" + a.out_type + "' is not u8, u16 or f32");
    }
    auto backend = apron::parse_backend(a.backend);
    if (!backend) throw apron::Error("--backend: '" + a.backend + "' is not auto, cpu, reference or cuda");
    options.backend = *backend;
    if (a.threads < 0) throw apron::Error("--threads: must be 0 (all cores) or positive");
    if (a.quality < 1 || a.quality > 100) throw apron::Error("--quality: must be 1..100");

    const apron::Pipeline pipeline(a.ops);  // parses and validates every --op before any file is touched
    const apron::ImageFormat out_format = apron::format_for_path(a.output);

    std::vector<apron::StageTiming> stages;
    auto t = Clock::now();
    const apron::Image input = apron::read_image(a.input, {a.max_pixels});
    stages.push_back({"read " + a.input, ms_since(t)});

    apron::ImageShape out_shape = input.shape();
    out_shape.type = options.out_type.value_or(input.type());
    std::string why;
    if (!apron::can_store(out_format, out_shape, &why)) throw apron::Error(a.output + ": " + why);
    if (a.plan_only) {
        std::cout << pipeline.describe(input.shape(), options);
        return 0;
    }

    options.timings = &stages;
    const apron::Image result = pipeline.run(input, options);

    t = Clock::now();
    apron::WriteOptions wo;
    wo.jpeg_quality = a.quality;
    apron::write_image(a.output, result, wo);
    stages.push_back({"write " + a.output, ms_since(t)});
    if (a.timing) print_timing(stages);
    return 0;
}

std::string param_line(const apron::ParamSpec& p) {
    std::string s = "    " + p.name;
    if (!p.default_value.empty()) s += "=" + p.default_value;
    else if (!p.optional) s += " (required)";
    s += "  " + p.help;
    const bool has_min = p.min > -1e299, has_max = p.max < 1e299;
    if ((p.kind == apron::ParamKind::number || p.kind == apron::ParamKind::integer) && (has_min || has_max)) {
        auto fmt = [](double v) {
            char b[32];
            std::snprintf(b, sizeof b, "%g", v);
            return std::string(b);
        };
        s += "  [";
        s += has_min ? fmt(p.min) + (p.min_exclusive ? " < " : " <= ") : "";
        s += "value";
        s += has_max ? " <= " + fmt(p.max) : "";
        s += "]";
    }
    return s;
}

int run_ops(const std::string& name) {
    for (const auto& op : apron::operations()) {
        if (!name.empty() && op.name != name) continue;
        std::cout << op.name << "  (" << op.category << ")  " << op.summary << '\n';
        std::cout << "    " << op.details << '\n';
        for (const auto& p : op.params) std::cout << param_line(p) << '\n';
        std::cout << '\n';
    }
    if (!name.empty() && !apron::find_operation(name)) throw apron::Error("ops: unknown operation '" + name + "'");
    return 0;
}

int run_info() {
    std::cout << "apron " << APRON_VERSION << '\n';
    std::cout << "backends:";
    for (const auto& b : apron::available_backends()) std::cout << ' ' << b;
    std::cout << "\nimage formats: " << apron::supported_formats() << '\n';
    std::cout << "cpu threads: " << std::thread::hardware_concurrency() << '\n';
    const auto devices = apron::cuda_devices();
    std::cout << "cuda: " << apron::cuda_status() << '\n';
    for (const auto& d : devices) std::cout << "  " << d << '\n';
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"apron: image convolution and morphology at the hardware's limit"};
    app.require_subcommand(1);
    app.set_version_flag("--version", APRON_VERSION);

    FilterArgs fa;
    auto* filter = app.add_subcommand("filter", "run operations on an image: apron filter IN OUT --op OP [--op OP ...]");
    filter->add_option("input", fa.input, "input image (PGM/PPM, PFM, PNG, JPEG, TIFF)")->required();
    filter->add_option("output", fa.output, "output image; the format follows the extension")->required();
    filter->add_option("--op", fa.ops, "NAME[:key=value,...], applied in order (see `apron ops`)")->required();
    filter->add_option("--out-type", fa.out_type, "u8, u16 or f32 (default: the input's type)");
    filter->add_option("--backend", fa.backend, "auto, cpu, reference or cuda")->capture_default_str();
    filter->add_option("--threads", fa.threads, "CPU threads, 0 = all cores")->capture_default_str();
    filter->add_option("--max-pixels", fa.max_pixels, "refuse input images larger than this")->capture_default_str();
    filter->add_option("--quality", fa.quality, "JPEG quality 1..100")->capture_default_str();
    filter->add_flag("--timing", fa.timing, "print the time of each stage (read, each operation, write) to stderr");
    filter->add_flag("--plan", fa.plan_only, "print the plan (algorithm of each step) and exit");

    std::string op_name;
    auto* ops = app.add_subcommand("ops", "list operations with their parameters, defaults and limits");
    ops->add_option("name", op_name, "show only this operation");
    auto* info = app.add_subcommand("info", "list backends, devices and image formats");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    try {
        if (*filter) return run_filter(fa);
        if (*ops) return run_ops(op_name);
        if (*info) return run_info();
    } catch (const apron::Error& e) {
        std::fprintf(stderr, "apron: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "apron: out of host memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "apron: internal error: %s\n", e.what());
        return 3;
    }
    return 0;
}
