// bench_cpu: the fast CPU executor against OpenCV on the same machine in the same run.
//
//   bench_cpu [--size N] [--threads T] [--reps R] [--csv FILE] [--only correlate|gaussian|dilate]
//
// Cases (1 channel, u8 and f32, N x N, default 4096): correlate with random masks vs cv::filter2D
// (BORDER_REFLECT_101 = apron's mirror), gaussian vs cv::GaussianBlur with ksize 2*ceil(3 sigma)+1, and
// dilate with a rectangle vs cv::dilate (OpenCV's default border = apron's ignored outside). Each side
// runs on all cores (T threads); outputs are compared before timing; a time is the median of R runs
// after a warm-up, wall clock, the two sides alternating run by run.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "plan/plan.hpp"
#include "plan/step_kind.hpp"

using namespace apron;

namespace {

struct Options {
    int size = 4096, threads = 0, reps = 7;
    std::string csv, only;
};

struct Row {
    std::string op, type, algorithm;
    double ours_ms = 0, cv_ms = 0, diff = 0;
};

// Median wall-clock times of a and b, run alternately (a, b, a, b, ...) after one warm-up each, so a
// busy machine slows both sides alike. Slow cases stop after 3 pairs once 6 s are spent.
std::pair<double, double> median_ms(const std::function<void()>& a, const std::function<void()>& b, int reps) {
    a();
    b();
    std::vector<double> ta, tb;
    auto time = [](const std::function<void()>& f) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
        ta.push_back(time(a));
        tb.push_back(time(b));
        if (r >= 2 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > 6.0) break;
    }
    auto median = [](std::vector<double> t) {
        std::sort(t.begin(), t.end());
        return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
    };
    return {median(ta), median(tb)};
}

cv::Mat as_mat(const Image& img) {
    const int type = img.type() == PixelType::u8 ? CV_8UC1 : img.type() == PixelType::u16 ? CV_16UC1 : CV_32FC1;
    return cv::Mat(img.height(), img.width(), type, const_cast<std::byte*>(img.view().row_bytes(0)), img.pitch());
}

double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
    cv::Mat fa, fb;
    a.convertTo(fa, CV_64F);
    b.convertTo(fb, CV_64F);
    double lo, hi;
    cv::minMaxLoc(cv::abs(fa - fb), &lo, &hi);
    return hi;
}

Image random_image(int n, PixelType t, unsigned seed) {
    Image img(n, n, 1, t);
    cv::Mat m = as_mat(img);
    cv::RNG rng(seed);
    if (t == PixelType::u8) rng.fill(m, cv::RNG::UNIFORM, 0, 256);
    else rng.fill(m, cv::RNG::UNIFORM, 0.0f, 1.0f);
    return img;
}

// The plan of a one-step program, as the pipeline would make it.
StepPlan plan_of(const OpProgram& prog, const ImageShape& shape) {
    ExecutionPlan ep = make_plan({prog}, shape, shape.type, Backend::cpu);
    if (ep.operations.at(0).steps.size() != 1) fail(prog.spec, "bench expects a one-step program");
    return ep.operations[0].steps[0];
}

// The step's label without its size and types: "linear 5x5 separable exact f32-acc ..." -> "separable exact".
std::string algorithm_of(const StepPlan& s) {
    std::istringstream words(s.label);
    std::string kind, size, algorithm, exactness;
    words >> kind >> size >> algorithm >> exactness;
    return kind == "linear" ? algorithm + " " + exactness : kind == "combine" ? kind : algorithm;
}

class Bench {
public:
    explicit Bench(const Options& o) : o_(o), ex_(make_cpu_executor(o.threads)) {
        cv::setNumThreads(o.threads > 0 ? o.threads : int(std::thread::hardware_concurrency()));
    }

    void correlate(int k, PixelType t) {
        std::mt19937 rng(static_cast<unsigned>(k));
        std::vector<double> w(static_cast<std::size_t>(k) * k);
        double sum = 0;
        for (double& v : w) sum += v = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        for (double& v : w) v /= sum;  // keeps u8 results in range, so they say something
        LinearStep s;
        s.mask = Mask(k, k, w);
        s.border = BorderMode::mirror;
        OpProgram prog;
        prog.spec = "correlate " + std::to_string(k) + "x" + std::to_string(k);
        prog.steps.push_back(Step{s, -1, -1});
        cv::Mat kernel(k, k, CV_32F);
        for (int i = 0; i < k * k; ++i) kernel.at<float>(i / k, i % k) = float(w[std::size_t(i)]);
        run(prog.spec, prog, t, [kernel](const cv::Mat& in, cv::Mat& out) {
            cv::filter2D(in, out, -1, kernel, cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
        });
    }

    void gaussian(double sigma, PixelType t) {
        const int ksize = 2 * int(std::ceil(3 * sigma)) + 1;
        char spec[80];
        std::snprintf(spec, sizeof spec, "gaussian:sigma=%g,border=mirror", sigma);
        char label[64];
        std::snprintf(label, sizeof label, "gaussian s=%g (%dx%d)", sigma, ksize, ksize);
        run(label, parse_operation(spec), t, [=](const cv::Mat& in, cv::Mat& out) {
            cv::GaussianBlur(in, out, cv::Size(ksize, ksize), sigma, sigma, cv::BORDER_REFLECT_101);
        });
    }

    void dilate(int k, PixelType t) {
        const std::string spec = "dilate:se=rect:" + std::to_string(k) + "x" + std::to_string(k);
        const cv::Mat se = cv::getStructuringElement(cv::MORPH_RECT, cv::Size(k, k));
        run("dilate rect " + std::to_string(k) + "x" + std::to_string(k), parse_operation(spec), t,
            [se](const cv::Mat& in, cv::Mat& out) { cv::dilate(in, out, se); });
    }

    void report() const {
        std::printf("\n%-24s %-5s %-18s %10s %10s %11s %11s %8s %9s\n", "case", "type", "apron algorithm", "apron ms",
                    "opencv ms", "apron Mpx/s", "opencv Mpx/s", "speedup", "max diff");
        for (const Row& r : rows_)
            std::printf("%-24s %-5s %-18s %10.2f %10.2f %11.0f %11.0f %7.2fx %9.3g\n", r.op.c_str(), r.type.c_str(),
                        r.algorithm.c_str(), r.ours_ms, r.cv_ms, mpix(r.ours_ms), mpix(r.cv_ms), r.cv_ms / r.ours_ms, r.diff);
        if (!o_.csv.empty()) {
            std::ofstream f(o_.csv);
            f << "case,type,algorithm,size,threads,apron_ms,opencv_ms,apron_mpix_s,opencv_mpix_s,speedup,max_diff\n";
            for (const Row& r : rows_)
                f << '"' << r.op << "\"," << r.type << ',' << r.algorithm << ',' << o_.size << ',' << threads() << ','
                  << r.ours_ms << ',' << r.cv_ms << ',' << mpix(r.ours_ms) << ',' << mpix(r.cv_ms) << ','
                  << r.cv_ms / r.ours_ms << ',' << r.diff << '\n';
            if (!f) fail(o_.csv, "cannot write the CSV file");
        }
    }

private:
    int threads() const { return o_.threads > 0 ? o_.threads : int(std::thread::hardware_concurrency()); }
    double mpix(double ms) const { return double(o_.size) * o_.size / (ms * 1e3); }

    void run(const std::string& label, const OpProgram& prog, PixelType t,
             const std::function<void(const cv::Mat&, cv::Mat&)>& cv_op) {
        const Image in = random_image(o_.size, t, 42);
        Image out(in.shape());
        const StepPlan sp = plan_of(prog, in.shape());
        auto ours = [&] {
            run_step_kind(*ex_, sp, in.view(), {}, out.view());
        };
        const cv::Mat src = as_mat(in);
        cv::Mat dst(src.size(), src.type());
        auto theirs = [&] { cv_op(src, dst); };
        ours();
        theirs();
        Row r{label, to_string(t), algorithm_of(sp)};
        r.diff = max_abs_diff(as_mat(out), dst);
        std::tie(r.ours_ms, r.cv_ms) = median_ms(ours, theirs, o_.reps);
        std::printf("%-24s %-5s apron %9.2f ms   opencv %9.2f ms   %6.2fx   max diff %.3g\n", r.op.c_str(), r.type.c_str(),
                    r.ours_ms, r.cv_ms, r.cv_ms / r.ours_ms, r.diff);
        std::fflush(stdout);
        rows_.push_back(r);
    }

    Options o_;
    std::unique_ptr<Executor> ex_;
    std::vector<Row> rows_;
};

} // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) { std::fprintf(stderr, "bench_cpu: %s needs a value\n", a.c_str()); std::exit(2); }
            return argv[++i];
        };
        if (a == "--size") o.size = std::stoi(next());
        else if (a == "--threads") o.threads = std::stoi(next());
        else if (a == "--reps") o.reps = std::max(1, std::stoi(next()));
        else if (a == "--csv") o.csv = next();
        else if (a == "--only") o.only = next();
        else {
            std::fprintf(stderr, "usage: bench_cpu [--size N] [--threads T] [--reps R] [--csv FILE] [--only correlate|gaussian|dilate]\n");
            return 2;
        }
    }
    try {
        Bench b(o);
        std::printf("bench_cpu: %dx%d, 1 channel, %d threads, OpenCV %s\n", o.size, o.size,
                    o.threads > 0 ? o.threads : int(std::thread::hardware_concurrency()), CV_VERSION);
        for (PixelType t : {PixelType::u8, PixelType::f32}) {
            if (o.only.empty() || o.only == "correlate")
                for (int k : {3, 5, 7, 13, 17, 31}) b.correlate(k, t);
            if (o.only.empty() || o.only == "gaussian")
                for (double s : {1.0, 2.0, 3.0, 5.0}) b.gaussian(s, t);
            if (o.only.empty() || o.only == "dilate")
                for (int k : {3, 5, 7, 9, 15, 21, 31}) b.dilate(k, t);
        }
        b.report();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_cpu: %s\n", e.what());
        return 1;
    }
    return 0;
}
