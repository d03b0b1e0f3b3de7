// The CUDA executor: images live in device memory from upload to download, every step runs on one
// stream, and device memory comes from the stream-ordered pool (cudaMallocAsync), so the buffers of a
// pipeline are recycled without synchronising.
//
// Each step runs the kernel family the plan records (chosen from the dispatch table, dispatch_table.hpp);
// a plan made for another backend is dispatched through the same table here. The baseline kernels below
// (one thread per output sample, border through map_index, the same finish functions as every backend)
// are the families linear_direct and morph_direct, which take any mask and element.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/host_memory.hpp"
#include "core/linear_finish.hpp"
#include "core/missing_sample.hpp"
#include "core/morph_value.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/launch_record.hpp"
#include "cuda/device_view.hpp"
#include "cuda/direct_imma.hpp"
#include "cuda/column_linear.hpp"
#include "cuda/dispatch_table.hpp"
#include "cuda/direct_tiled.hpp"
#include "cuda/fft_linear.hpp"
#include "cuda/morph_chords.hpp"
#include "cuda/morph_rect.hpp"
#include "cuda/rank_filter.hpp"
#include "cuda/runtime_direct.hpp"
#include "cuda/separable_fused.hpp"
#include "cuda/separable_volume.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace cuda {
namespace {

template <class T>
__device__ __forceinline__ T load(const DeviceView& v, int x, int y, int c) {
    return reinterpret_cast<const T*>(v.data + std::size_t(y) * v.pitch)[std::size_t(x) * v.channels + c];
}

template <class T>
__device__ __forceinline__ T* out_row(std::byte* data, std::size_t pitch, int y) {
    return reinterpret_cast<T*>(data + std::size_t(y) * pitch);
}

// Sample through the border; `outside` for constant.
template <class T>
__device__ __forceinline__ T sample(const DeviceView& v, long long x, long long y, int c, BorderMode mode, T outside) {
    const int xi = map_index(x, v.width, mode), yi = map_index(y, v.height, mode);
    return (xi < 0 || yi < 0) ? outside : load<T>(v, xi, yi, c);
}

template <class In, class Out, bool Exact>
__global__ void linear_direct(DeviceView in, std::byte* out, std::size_t out_pitch, const void* weights, int mw, int mh,
                              int ax, int ay, BorderMode mode, In outside, LinearFinish finish, bool f64) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (k >= in.width * in.channels || y >= in.height) return;
    const int x = k / in.channels, c = k % in.channels;
    if constexpr (Exact) {
        const auto* w = static_cast<const long long*>(weights);
        long long sum = 0;
        for (int j = 0; j < mh; ++j)
            for (int i = 0; i < mw; ++i) {
                const long long wt = w[j * mw + i];
                if (wt) sum += wt * (long long)sample<In>(in, x + i - ax, y + j - ay, c, mode, outside);
            }
        out_row<Out>(out, out_pitch, y)[k] = finish_exact<Out>(sum, finish);
    } else {
        const auto* w = static_cast<const float*>(weights);
        float sum = 0;
        for (int j = 0; j < mh; ++j)
            for (int i = 0; i < mw; ++i) {
                const float wt = w[j * mw + i];
                if (wt != 0.0f) sum = fmaf(wt, float(sample<In>(in, x + i - ax, y + j - ay, c, mode, outside)), sum);
            }
        (void)f64;
        out_row<Out>(out, out_pitch, y)[k] = finish_float<Out, float>(sum, finish);
    }
}

template <class T>
__global__ void morph_direct(DeviceView in, std::byte* out, std::size_t out_pitch, const unsigned char* cells, int mw,
                             int mh, int ax, int ay, bool dilate, bool ignore, BorderMode mode, T outside, T identity) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (k >= in.width * in.channels || y >= in.height) return;
    const int x = k / in.channels, c = k % in.channels;
    T best = identity;
    for (int j = 0; j < mh; ++j)
        for (int i = 0; i < mw; ++i) {
            if (!cells[j * mw + i]) continue;
            const long long sx = x + i - ax, sy = y + j - ay;
            T v;
            if (ignore) {
                if (sx < 0 || sy < 0 || sx >= in.width || sy >= in.height) continue;
                v = load<T>(in, int(sx), int(sy), c);
            } else {
                v = sample<T>(in, sx, sy, c, mode, outside);
            }
            best = morph_pick(dilate, best, v);  // f32: NaN skipped, NaN when nothing else (SPEC)
        }
    out_row<T>(out, out_pitch, y)[k] = best;
}

template <class A, class B, class Out>
__global__ void combine_kernel(DeviceView a, DeviceView b, std::byte* out, std::size_t out_pitch, CombineStep s) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (k >= a.width * a.channels || y >= a.height) return;
    double v = mul_rn(s.a, double(reinterpret_cast<const A*>(a.data + std::size_t(y) * a.pitch)[k]));
    if (s.b != 0) v = add_rn(v, mul_rn(s.b, double(reinterpret_cast<const B*>(b.data + std::size_t(y) * b.pitch)[k])));
    out_row<Out>(out, out_pitch, y)[k] = store_pixel<Out>(add_rn(v, s.c));
}

// The forms of NaN- and nodata-aware linear filters (fill, valid, ratio, mark), one thread per sample, through
// the rule every backend shares (core/missing_sample.hpp). B is read only where the form has one (s.b != 0).
template <class A, class B, class Out>
__global__ void missing_form_kernel(DeviceView a, DeviceView b, std::byte* out, std::size_t out_pitch, CombineStep s) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (k >= a.width * a.channels || y >= a.height) return;
    const A va = reinterpret_cast<const A*>(a.data + std::size_t(y) * a.pitch)[k];
    const B vb = s.b != 0 ? reinterpret_cast<const B*>(b.data + std::size_t(y) * b.pitch)[k] : B(0);
    out_row<Out>(out, out_pitch, y)[k] = missing_form_sample<A, B, Out>(s, va, vb);
}

dim3 grid_for(const ImageShape& s, dim3 block) {
    return dim3(unsigned((s.width * s.channels + block.x - 1) / block.x), unsigned((s.height + block.y - 1) / block.y));
}

// The stream-ordered pool gives freed memory back to the driver at every synchronisation unless told to
// keep some, and a batch allocates and frees its intermediates for every image: keep up to a quarter of
// the device's memory in the pool (once per device).
void keep_pool_memory() {
    static std::mutex mutex;
    static std::set<int> done;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return void(cudaGetLastError());
    std::lock_guard<std::mutex> lock(mutex);
    if (!done.insert(device).second) return;
    cudaMemPool_t pool = nullptr;
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
        return void(cudaGetLastError());
    std::uint64_t keep = total_bytes / 4;  // the attribute is a cuuint64_t (driver API): 64 bits
    if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) cudaGetLastError();
}

class CudaExecutor final : public Executor {
public:
    explicit CudaExecutor(cudaStream_t caller) : stream_(caller), own_stream_(caller == nullptr) {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
            cudaGetLastError();
            throw Error("--backend cuda: no CUDA device found");
        }
        // apron's own stream (no caller's stream) is a blocking one: it waits for the legacy default stream.
        // A caller that filled a device image with cudaMemcpy from pageable memory may get control back
        // before the DMA has landed; a non-blocking stream would let the kernels read the image under it
        // (seen on the H100: a ROI test failed 1 run in 2 with 16 test processes sharing the GPU).
        if (own_stream_) APRON_CUDA_CHECK(cudaStreamCreate(&stream_));
        keep_pool_memory();
    }
    ~CudaExecutor() override {
        // The copy streams only ever run ahead of work that stream_ waits for, so stream_ orders them all.
        for (cudaStream_t s : {up_, down_})
            if (s) {
                cudaStreamSynchronize(s);
                cudaStreamDestroy(s);
            }
        if (mark_) cudaEventDestroy(mark_);
        if (own_stream_) {
            cudaStreamSynchronize(stream_);
            cudaStreamDestroy(stream_);
        }
    }

    Memory memory() const override { return Memory::device; }

    Buffer allocate(const ImageShape& shape) override {
        validate_shape(shape, "image");
        // Rows start on 256-byte boundaries; a volume's rows are packed instead (as on the host), so that a
        // step along z sees all of it as one image of a plane's pixels per row (run_plan's z view: one launch).
        const std::size_t pitch = shape.depth > 1 ? shape.row_bytes() : (shape.row_bytes() + 255) / 256 * 256;
        void* p = nullptr;
        const cudaError_t e = cudaMallocAsync(&p, pitch * std::size_t(shape.rows()), stream_);
        if (e != cudaSuccess) {
            cudaGetLastError();
            throw Error("cuda: out of device memory for a " + std::to_string(shape.width) + "x" +
                        std::to_string(shape.height) + " image (" + cudaGetErrorString(e) + ")");
        }
        cudaStream_t s = stream_;
        std::shared_ptr<void> storage(p, [s](void* q) { cudaFreeAsync(q, s); });
        return Buffer{ImageView{static_cast<std::byte*>(p), shape, pitch, Memory::device}, std::move(storage)};
    }

    void upload(ConstImageView host, ImageView mine) override {
        APRON_CUDA_CHECK(cudaMemcpy2DAsync(mine.data, mine.pitch, host.data, host.pitch, host.shape.row_bytes(),
                                           std::size_t(host.shape.rows()), cudaMemcpyHostToDevice, stream_));
    }
    void download(ConstImageView mine, ImageView host) override {
        APRON_CUDA_CHECK(cudaMemcpy2DAsync(host.data, host.pitch, mine.data, mine.pitch, mine.shape.row_bytes(),
                                           std::size_t(mine.shape.rows()), cudaMemcpyDeviceToHost, stream_));
        synchronize();
    }
    void synchronize() override { APRON_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

    void linear(const LinearPlan& p, ConstImageView in, ImageView out) override {
        // The family bound in the plan; a plan made for another backend (none bound) asks the table now.
        const LinearFamily family = bound_linear_family(p, in.shape.plane());  // a volume's: its planes' (runs_planes)
        // Each family still checks the plan (cheap): a hand-made plan may name a family that cannot run it.
        switch (family) {
        case LinearFamily::fft:
            if (launch_fft_linear(p, in, out, stream_)) return;
            break;  // declined (a weight the transforms cannot take: see fft_linear.hpp)
        case LinearFamily::tensor:
            if (direct_imma_supports(p, in)) return record_launch(family_name(family, p)), launch_direct_imma(p, in, out, stream_);
            break;  // a view the kernel does not take
        case LinearFamily::separable_fused:
            if (separable_fused_supports(p))
                return record_launch(family_name(family, p)), launch_separable_fused(p, in, out, stream_);
            break;
        case LinearFamily::column:
            if (column_linear_supports(p)) return record_launch(family_name(family, p)), launch_column_linear(p, in, out, stream_);
            break;
        case LinearFamily::direct_tiled: break;  // the first of the direct families below
        case LinearFamily::runtime_direct:
            if (runtime_direct_supports(p)) return record_launch(family_name(family, p)), launch_runtime_direct(p, in, out, stream_);
            break;
        case LinearFamily::linear_direct:
            return record_launch(family_name(family, p)), launch_linear_direct(p, in, out);
        }
        // direct_tiled, or the recorded family declined: the direct families in the table's order compute
        // the same sum (direct_tiled picks dp4a, registers or tiles by the view's alignment, and records it).
        if (direct_tiled_supports(p) && !zero_taps_matter(p)) return launch_direct_tiled(p, in, out, stream_);
        if (!overrides().runtime_off && runtime_direct_supports(p)) {
            record_launch(family_name(LinearFamily::runtime_direct, p));
            return launch_runtime_direct(p, in, out, stream_);
        }
        record_launch(family_name(LinearFamily::linear_direct, p));
        launch_linear_direct(p, in, out);
    }

    bool fuses_linear_volume(const LinearPlan& plane, const LinearPlan& along_z, const ImageShape& volume) const override {
        return separable_volume_supports(plane, along_z, volume);
    }
    bool linear_volume(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out) override {
        if (!separable_volume_supports(plane, along_z, in.shape)) return false;
        record_launch({"cuda.separable_volume", ""});
        launch_separable_volume(plane, along_z, in, out, stream_);
        return true;
    }

    // Plane steps whose kernel takes a volume's planes as blockIdx.z (one launch for all of them): the fused
    // separable filter and the chord morphology (a ball's plane parts).
    bool runs_planes(const StepPlan& step, const ImageShape& volume) const override {
        if (volume.depth > 65535) return false;
        if (const auto* p = std::get_if<LinearPlan>(&step.what))
            return bound_linear_family(*p, volume.plane()) == LinearFamily::separable_fused && separable_fused_supports(*p);
        if (const auto* m = std::get_if<MorphPlan>(&step.what)) {
            const MorphFamily family = bound_morph_family(*m, volume.plane());
            if (family == MorphFamily::morph_rect) return morph_rect_supports(*m);  // batched or a loop inside
            return family == MorphFamily::morph_chords && morph_chords_supports(*m);
        }
        return false;
    }

    void morph(const MorphPlan& p, ConstImageView in, ImageView out) override {
        const MorphFamily family = bound_morph_family(p, in.shape.plane());  // bound in the plan, or the table's now
        // morph_rect's launcher takes its fast path or its general kernel by the view's alignment.
        if (family == MorphFamily::morph_rect && morph_rect_supports(p)) return launch_morph_rect(p, in, out, stream_);
        if (family == MorphFamily::morph_chords && morph_chords_supports(p)) return launch_morph_chords(p, in, out, stream_);
        record_launch({name_of(MorphFamily::morph_direct), ""});
        // morph_direct takes every element.
        const Mask& e = p.step.element;
        std::vector<unsigned char> cells(e.weights.size());
        for (std::size_t k = 0; k < cells.size(); ++k) cells[k] = e.weights[k] != 0;
        auto d_cells = to_device(cells.data(), cells.size());
        const dim3 block(64, 4), grid = grid_for(out.shape, block);
        with_type(p.type, [&]<class T>() {
            const bool dilate = p.step.kind == MorphKind::dilate;
            const T identity = morph_identity<T>(dilate);
            morph_direct<T><<<grid, block, 0, stream_>>>(
                device_view(in), out.data, out.pitch, static_cast<const unsigned char*>(d_cells.get()), e.width, e.height,
                e.anchor_x, e.anchor_y, dilate, !p.step.border, p.step.border.value_or(BorderMode::constant),
                store_pixel<T>(p.step.border_value), identity);
        });
        APRON_CUDA_CHECK_LAUNCH("morph_direct");
    }

    void combine(const CombinePlan& p, ConstImageView a, ConstImageView b, ImageView out) override {
        record_launch(choose_combine(p, out.shape));
        const dim3 block(64, 4), grid = grid_for(out.shape, block);
        const DeviceView db = b.data ? device_view(b) : device_view(a);
        with_type(p.a_type, [&]<class A>() {
            with_type(p.b_type, [&]<class B>() {
                with_type(p.out, [&]<class Out>() {
                    if (p.step.form != CombineForm::affine)
                        missing_form_kernel<A, B, Out><<<grid, block, 0, stream_>>>(device_view(a), db, out.data, out.pitch, p.step);
                    else
                        combine_kernel<A, B, Out><<<grid, block, 0, stream_>>>(device_view(a), db, out.data, out.pitch, p.step);
                });
            });
        });
        APRON_CUDA_CHECK_LAUNCH("combine");
    }

    void rank(const RankPlan& p, ConstImageView in, ImageView out) override { launch_rank(p, in, out, stream_); }

    // Row bands: band b goes up on up_, is filtered on stream_ once the input rows it reads are there, and
    // comes down on down_, so the upload of later bands, the kernels and the download of earlier bands run
    // at once (PCIe is full duplex). Pinned host memory only: pageable copies do not overlap.
    bool linear_overlapped(const LinearPlan& plan, ConstImageView host_in, ImageView host_out) override {
        const LinearPlan* p = &plan;
        // A float separable plan runs the fused separable kernel, whose rounding differs from the 2D
        // kernel's: bands run the 2D kernel, so only exact plans (identical bits either way) may take them.
        // The FFT's float rounding is its own too: it never bands. Tensor-core plans are exact, so bands of the
        // 2D kernel give their bits (the copies, not the kernel, bound a host-to-host run).
        if (!p || !direct_tiled_supports(*p) || zero_taps_matter(*p) || (p->algorithm == LinearAlgorithm::separable && !p->exact) ||
            p->algorithm == LinearAlgorithm::fft)
            return false;
        if (!is_pinned(host_in.data) || !is_pinned(host_out.data)) return false;
        const int height = host_in.height();
        const std::size_t band_bytes = std::size_t(2) << 20;  // ~2 MB per band: about 40 us at PCIe rate
        const int band = std::max(64, int(band_bytes / std::max<std::size_t>(1, host_in.shape.row_bytes())));
        const int bands = (height + band - 1) / band;
        if (bands < 3) return false;  // too small to gain from overlap
        for (cudaStream_t* s : {&up_, &down_})
            if (!*s) APRON_CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
        Buffer in = allocate(host_in.shape), out = allocate(host_out.shape);
        // The copy streams start after what the caller's stream holds (the buffers' allocation included).
        order(stream_, up_);
        order(stream_, down_);
        const int below = p->step.mask.height - 1 - p->step.mask.anchor_y;  // rows read under an output row
        // Wrap: the top band reads the last rows (as many as the mask reaches above), so they go first.
        const int last = p->step.border == BorderMode::wrap ? std::min(height, p->step.mask.anchor_y) : 0;
        if (last > 0) copy_rows(host_in, in.view, height - last, height, cudaMemcpyHostToDevice, up_);
        int uploaded = 0;
        for (int b = 0; b < bands; ++b) {
            const int y0 = b * band, y1 = std::min(height, y0 + band);
            // One band beyond the rows the mask reaches: kernels work in row groups (dp4a: 4 rows a thread,
            // tiles of a block's rows) and read a group's whole window even past the band's end, discarding
            // those outputs. Those rows must not still be in flight (compute-sanitizer initcheck saw the reads).
            const int need = std::min(height - last, y1 + below + band);
            if (need > uploaded) {
                copy_rows(host_in, in.view, uploaded, need, cudaMemcpyHostToDevice, up_);
                uploaded = need;
            }
            order(up_, stream_);
            launch_direct_tiled(*p, in.cview(), out.view, stream_, y0, y1);
            order(stream_, down_);
            copy_rows(out.cview(), host_out, y0, y1, cudaMemcpyDeviceToHost, down_);
        }
        order(down_, stream_);  // the buffers are freed on stream_, after the last download
        return true;
    }

private:
    // The family linear_direct: any mask, one thread per output sample.
    void launch_linear_direct(const LinearPlan& p, ConstImageView in, ImageView out) {
        const Mask& m = p.step.mask;
        // Weights go up per call (stream-ordered, from a host copy kept alive until the stream passes).
        std::shared_ptr<void> weights;
        if (p.exact) {
            std::vector<long long> w(p.integer_mask.weights.begin(), p.integer_mask.weights.end());
            weights = to_device(w.data(), w.size() * sizeof(long long));
        } else {
            std::vector<float> w(m.weights.begin(), m.weights.end());
            weights = to_device(w.data(), w.size() * sizeof(float));
        }
        const dim3 block(64, 4), grid = grid_for(out.shape, block);
        with_type(p.in, [&]<class In>() {
            with_type(p.out, [&]<class Out>() {
                const In outside = store_pixel<In>(p.step.border_value);
                if (p.exact)
                    linear_direct<In, Out, true><<<grid, block, 0, stream_>>>(
                        device_view(in), out.data, out.pitch, weights.get(), m.width, m.height, m.anchor_x, m.anchor_y,
                        p.step.border, outside, p.finish, false);
                else
                    linear_direct<In, Out, false><<<grid, block, 0, stream_>>>(
                        device_view(in), out.data, out.pitch, weights.get(), m.width, m.height, m.anchor_x, m.anchor_y,
                        p.step.border, outside, p.finish, false);
            });
        });
        APRON_CUDA_CHECK_LAUNCH("linear_direct");
    }

    // Makes `waiter` wait for what `s` holds now. One event serves every hand-over: a wait binds to the
    // record before it, so re-recording afterwards is safe.
    void order(cudaStream_t s, cudaStream_t waiter) {
        if (!mark_) APRON_CUDA_CHECK(cudaEventCreateWithFlags(&mark_, cudaEventDisableTiming));
        APRON_CUDA_CHECK(cudaEventRecord(mark_, s));
        APRON_CUDA_CHECK(cudaStreamWaitEvent(waiter, mark_));
    }

    static void copy_rows(ConstImageView from, ImageView to, int y0, int y1, cudaMemcpyKind kind, cudaStream_t s) {
        APRON_CUDA_CHECK(cudaMemcpy2DAsync(to.data + std::size_t(y0) * to.pitch, to.pitch,
                                           from.data + std::size_t(y0) * from.pitch, from.pitch, from.shape.row_bytes(),
                                           std::size_t(y1 - y0), kind, s));
    }

    // Copies small host data (masks) to a stream-ordered device allocation.
    std::shared_ptr<void> to_device(const void* host, std::size_t bytes) {
        void* p = nullptr;
        APRON_CUDA_CHECK(cudaMallocAsync(&p, bytes ? bytes : 1, stream_));
        cudaStream_t s = stream_;
        std::shared_ptr<void> owner(p, [s](void* q) { cudaFreeAsync(q, s); });
        // Pageable source: the copy is staged before the call returns, so `host` may go away after it.
        APRON_CUDA_CHECK(cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice, stream_));
        return owner;
    }

    cudaStream_t stream_ = nullptr;
    bool own_stream_ = true;
    cudaStream_t up_ = nullptr, down_ = nullptr;  // copy streams of linear_overlapped, made on first use
    cudaEvent_t mark_ = nullptr;
};

} // namespace
} // namespace cuda

std::unique_ptr<Executor> make_cuda_executor(void* stream) {
    return std::make_unique<cuda::CudaExecutor>(static_cast<cudaStream_t>(stream));
}

bool cuda_available() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return count > 0;
}

} // namespace apron
