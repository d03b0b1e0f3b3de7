// bench_cpu_user: the CPU backend in process on the cases users run, 1, 3 and 4 interleaved channels, timed
// through the public API (Pipeline::run into a caller's image, as a program linking apron does). OpenCV's
// side of the comparison is bench/peers/cpu_peers.py --user (OpenCV-Python in process, and apron's CLI step
// time), which builds the same cases under the same names; bench/report.py joins the CSVs.
//
//   bench_cpu_user [--size N] [--threads T] [--reps R] [--types u8[,u16,f32]] [--channels 1,3,4] [--csv FILE]
//
// Cases (OpenCV's counterpart in brackets; linear borders mirror = OpenCV's BORDER_REFLECT_101, morphology
// ignores outside pixels = OpenCV's default):
//   gaussian  sigma=1, sigma=2     gaussian:sigma=S,border=mirror      [GaussianBlur, ksize 2 ceil(3 S) + 1]
//   correlate 3x3, 5x5, 7x7        the mask of user_cpu_mask(k)        [filter2D]
//   box       5x5                  box:width=5,border=mirror           [blur]
//   dilate    rect:9x9, rect:21x21, ellipse:9x9, ellipse:21x21          [dilate, getStructuringElement]
// Every output is checked once against the reference backend on the top and bottom bands of rows
// (bench/band_check.hpp). A time is the median of R runs after one warm-up, wall clock. CSV columns:
//   impl,op,type,param,size,ms,mpix_s,channels,shape,gpix_s,gsamples_s,kernel,check,threads,max_diff
// (impl apron-cpu; max_diff empty: cpu_peers.py --user's column, the same header so the files concatenate)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "band_check.hpp"
#include "plan/plan.hpp"

using namespace apron;

namespace {

// The correlate cases' k x k weights, the same in cpu_peers.py: w_i = ((7 i + k) mod 11) + 1 + sqrt(i + 1) / 3
// over their sum (i in row-major order). Not integers over one divisor, so integer images take the float path
// as OpenCV's filter2D does; not separable.
Mask user_cpu_mask(int k) {
    std::vector<double> w(std::size_t(k) * k);
    double sum = 0;
    for (std::size_t i = 0; i < w.size(); ++i) sum += w[i] = double((7 * i + k) % 11) + 1 + std::sqrt(double(i + 1)) / 3;
    for (double& v : w) v /= sum;
    return Mask(k, k, w);
}

struct CpuCase {
    std::string op, shape;
    double param;
    OpProgram program;
};

std::vector<CpuCase> cpu_cases() {
    std::vector<CpuCase> out;
    for (double s : {1.0, 2.0}) {
        char shape[32], spec[64];
        std::snprintf(shape, sizeof shape, "sigma=%g", s);
        std::snprintf(spec, sizeof spec, "gaussian:%s,border=mirror", shape);
        out.push_back({"gaussian", shape, s, parse_operation(spec)});
    }
    for (int k : {3, 5, 7}) {
        LinearStep step{user_cpu_mask(k), BorderMode::mirror};
        const std::string side = std::to_string(k) + "x" + std::to_string(k);
        out.push_back({"correlate", side, double(k), OpProgram{"correlate " + side, {Step{step}}}});
    }
    out.push_back({"box", "5x5", 5, parse_operation("box:width=5,border=mirror")});
    for (const char* shape : {"rect:9x9", "rect:21x21", "ellipse:9x9", "ellipse:21x21"})
        out.push_back({"dilate", shape, std::string(shape).find("21") != std::string::npos ? 21.0 : 9.0,
                       parse_operation(std::string("dilate:se=") + shape)});
    return out;
}

Image random_image(int n, int channels, PixelType t, unsigned seed) {
    Image img(n, n, channels, t);
    std::mt19937 rng(seed);
    const std::size_t samples = std::size_t(n) * channels;
    for (int y = 0; y < n; ++y)
        for (std::size_t i = 0; i < samples; ++i) {
            const std::uint32_t r = rng();
            if (t == PixelType::u8) img.row<std::uint8_t>(y)[i] = std::uint8_t(r);
            else if (t == PixelType::u16) img.row<std::uint16_t>(y)[i] = std::uint16_t(r);
            else img.row<float>(y)[i] = float(r % 256);
        }
    return img;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ',');)
        if (!part.empty()) out.push_back(part);
    return out;
}

// What ExecutionPlan::describe() says of the steps ('; '-joined step lines).
std::string describe_steps(const ExecutionPlan& plan) {
    std::istringstream in(plan.describe());
    std::string line, out;
    std::getline(in, line);
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != ' ') continue;
        line.erase(0, line.find_first_not_of(' '));
        out += (out.empty() ? "" : "; ") + line;
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    int size = 4096, threads = 0, reps = 7;
    std::string csv, types = "u8", channels = "1,3,4";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_cpu_user: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--size") size = std::stoi(next());
        else if (a == "--threads") threads = std::stoi(next());
        else if (a == "--reps") reps = std::max(1, std::stoi(next()));
        else if (a == "--types") types = next();
        else if (a == "--channels") channels = next();
        else if (a == "--csv") csv = next();
        else {
            std::fprintf(stderr, "usage: bench_cpu_user [--size N] [--threads T] [--reps R] [--types u8,u16,f32] "
                                 "[--channels 1,3,4] [--csv FILE]\n");
            return 2;
        }
    }
    try {
        const int used = threads > 0 ? threads : int(std::thread::hardware_concurrency());
        std::printf("bench_cpu_user: %dx%d, %d threads\n", size, size, used);
        std::ofstream f;
        if (!csv.empty()) {
            f.open(csv);
            f << "impl,op,type,param,size,ms,mpix_s,channels,shape,gpix_s,gsamples_s,kernel,check,threads,max_diff\n";
        }
        const RunOptions options{.backend = Backend::cpu, .threads = threads};
        for (const std::string& tname : split(types)) {
            const std::optional<PixelType> t = parse_pixel_type(tname);
            if (!t) throw Error("--types: unknown type " + tname);
            for (const std::string& cname : split(channels)) {
                const int c = std::stoi(cname);
                const Image in = random_image(size, c, *t, 42u + unsigned(c));
                Image out(in.shape());
                for (const CpuCase& k : cpu_cases()) {
                    Pipeline p;
                    p.add(k.program);
                    const ExecutionPlan plan = make_plan({k.program}, in.shape(), *t, Backend::cpu);
                    p.run(in.view(), out.view(), options);
                    const bench::CheckResult check =
                        bench::check_bands(k.program, plan, in, std::as_const(out).view(), Backend::reference, 8);
                    std::vector<double> ms;
                    const auto start = std::chrono::steady_clock::now();
                    for (int r = 0; r < reps; ++r) {
                        const auto t0 = std::chrono::steady_clock::now();
                        p.run(in.view(), out.view(), options);
                        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
                        if (r >= 2 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > 4) break;
                    }
                    std::sort(ms.begin(), ms.end());
                    const double med = ms[ms.size() / 2], mpix_s = double(size) * size / (med * 1e3);
                    const std::string kernel = describe_steps(plan);
                    std::printf("%-10s %-14s %-4s C%d %9.2f ms %8.0f Mpix/s  %s  check %s\n", k.op.c_str(),
                                k.shape.c_str(), tname.c_str(), c, med, mpix_s, kernel.c_str(), check.text().c_str());
                    std::fflush(stdout);
                    if (f.is_open())
                        f << "apron-cpu," << k.op << ',' << tname << ',' << k.param << ',' << size << ',' << med << ','
                          << mpix_s << ',' << c << ",\"" << k.shape << "\"," << mpix_s / 1e3 << ',' << mpix_s * c / 1e3
                          << ",\"" << kernel << "\",\"" << check.text() << "\"," << used << ",\n" << std::flush;
                }
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_cpu_user: %s\n", e.what());
        return 1;
    }
    return 0;
}
