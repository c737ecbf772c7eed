// pica-jit behind an engine interface shaped like an emulator's shader JIT
// back end: per-draw setup, per-vertex run, batch run, and a geometry sink.
//
//   engine_adapter SHBIN|- DVLE INPUT
//
// Same arguments, input file and output as examples/c/batch.c, but the vertices
// go through ShaderEngine::RunVertex one at a time; the batch path is run too
// and must give the same bits (the program exits non-zero otherwise).
#include "pica_jit.h"

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Vec4 = std::array<float, 4>;
using Registers = std::array<Vec4, 16>;  // same layout as float[16][4]
static_assert(sizeof(Registers) == sizeof(float) * 64, "registers are packed floats");

struct EmittedVertex {
    unsigned id;
    bool primitive;
    bool winding;
    Registers outputs;
};

// Throws with pica-jit's message; the engine turns C status codes into exceptions
// on the C++ side only (never inside a callback that pica-jit calls).
void Check(PicaStatus status, const char* what) {
    if (status != PICA_STATUS_OK) {
        throw std::runtime_error(std::string(what) + ": " + pica_last_error());
    }
}

template <typename T, PicaStatus (*Free)(T*)>
struct Deleter {
    void operator()(T* p) const { Free(p); }
};
using ProgramPtr = std::unique_ptr<PicaProgram, Deleter<PicaProgram, pica_program_free>>;
using ShaderPtr = std::unique_ptr<PicaShader, Deleter<PicaShader, pica_shader_free>>;
using UniformsPtr = std::unique_ptr<PicaUniforms, Deleter<PicaUniforms, pica_uniforms_free>>;
using StatePtr = std::unique_ptr<PicaState, Deleter<PicaState, pica_state_free>>;

// The interface an emulator's vertex pipeline calls.
class ShaderEngine {
public:
    using GeometrySink = std::function<void(const EmittedVertex&)>;
    virtual ~ShaderEngine() = default;
    // Once per draw: which shader, and its uniforms.
    virtual void SetupDraw(const std::vector<std::pair<unsigned, Vec4>>& float_uniforms,
                           const std::vector<std::pair<unsigned, std::array<uint8_t, 4>>>& int_uniforms,
                           const std::vector<std::pair<unsigned, bool>>& bool_uniforms) = 0;
    // One vertex: input registers in, output registers out.
    virtual PicaStop RunVertex(const Registers& inputs, uint16_t input_mask, Registers& outputs) = 0;
    // Many vertices at once.
    virtual PicaBatchSummary RunBatch(const std::vector<Registers>& inputs, uint16_t input_mask,
                                      std::vector<Registers>& outputs) = 0;
    // Where geometry-shader emits go.
    virtual void SetGeometrySink(GeometrySink sink) = 0;
};

class PicaJitEngine final : public ShaderEngine {
public:
    PicaJitEngine(ProgramPtr program, size_t dvle) : program_(std::move(program)), dvle_(dvle) {
        PicaShaderOptions options;
        Check(pica_shader_options_default(&options), "pica_shader_options_default");
        options.dvle = dvle;
        PicaShader* shader = nullptr;
        Check(pica_shader_new(program_.get(), &options, &shader), "pica_shader_new");
        shader_.reset(shader);
        PicaState* state = nullptr;
        Check(pica_state_new(&state), "pica_state_new");
        state_.reset(state);
    }

    void SetupDraw(const std::vector<std::pair<unsigned, Vec4>>& float_uniforms,
                   const std::vector<std::pair<unsigned, std::array<uint8_t, 4>>>& int_uniforms,
                   const std::vector<std::pair<unsigned, bool>>& bool_uniforms) override {
        PicaUniforms* uniforms = nullptr;
        Check(pica_uniforms_new(&uniforms), "pica_uniforms_new");
        uniforms_.reset(uniforms);
        Check(pica_uniforms_apply_constants(uniforms, program_.get(), dvle_), "apply_constants");
        for (const auto& [n, v] : float_uniforms) Check(pica_uniforms_set_float(uniforms, n, v.data()), "set_float");
        for (const auto& [n, v] : int_uniforms) Check(pica_uniforms_set_int(uniforms, n, v.data()), "set_int");
        for (const auto& [n, v] : bool_uniforms) Check(pica_uniforms_set_bool(uniforms, n, v ? 1 : 0), "set_bool");
    }

    PicaStop RunVertex(const Registers& inputs, uint16_t input_mask, Registers& outputs) override {
        // The CLI's semantics: every vertex starts from a zero state.
        Check(pica_state_reset(state_.get()), "pica_state_reset");
        for (unsigned i = 0; i < 16; i++) {
            if (input_mask & (1u << i)) Check(pica_state_set_input(state_.get(), i, inputs[i].data()), "set_input");
        }
        uint32_t stop = 0;
        Check(pica_shader_run(shader_.get(), uniforms_.get(), state_.get(), &PicaJitEngine::OnEmit, this, &stop),
              "pica_shader_run");
        for (unsigned o = 0; o < 16; o++) Check(pica_state_get_output(state_.get(), o, outputs[o].data()), "get_output");
        return static_cast<PicaStop>(stop);
    }

    PicaBatchSummary RunBatch(const std::vector<Registers>& inputs, uint16_t input_mask,
                              std::vector<Registers>& outputs) override {
        outputs.resize(inputs.size());
        Check(pica_state_reset(state_.get()), "pica_state_reset");
        PicaBatchSummary summary{};
        Check(pica_shader_run_vertices(shader_.get(), uniforms_.get(), inputs.data()->data()->data(), inputs.size(),
                                       input_mask, outputs.data()->data()->data(), 0xffff, PICA_STATE_POLICY_RESET,
                                       state_.get(), &PicaJitEngine::OnEmit, this, &summary),
              "pica_shader_run_vertices");
        return summary;
    }

    void SetGeometrySink(GeometrySink sink) override { sink_ = std::move(sink); }

private:
    // Called by pica-jit; must not let an exception escape into it.
    static void OnEmit(void* user, const PicaEmittedVertex* vertex) noexcept {
        auto* self = static_cast<PicaJitEngine*>(user);
        if (!self->sink_) return;
        EmittedVertex v{vertex->vertex_id, vertex->primitive != 0, vertex->winding != 0, {}};
        std::memcpy(v.outputs.data(), vertex->outputs, sizeof v.outputs);
        try {
            self->sink_(v);
        } catch (...) {
            std::fputs("engine_adapter: geometry sink threw; vertex dropped\n", stderr);
        }
    }

    ProgramPtr program_;
    size_t dvle_;
    ShaderPtr shader_;
    UniformsPtr uniforms_;
    StatePtr state_;
    GeometrySink sink_;
};

uint32_t Bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

float FromBits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

void PrintRegisters(const Registers& regs) {
    for (unsigned r = 0; r < 16; r++) {
        std::printf("o%u", r);
        for (float f : regs[r]) std::printf(" %08" PRIx32, Bits(f));
        std::printf("\n");
    }
}

ProgramPtr LoadProgram(const std::string& path) {
    PicaProgram* program = nullptr;
    if (path == "-") {
        Check(pica_program_load_default(&program), "pica_program_load_default");
    } else {
        std::ifstream file(path, std::ios::binary);
        if (!file) throw std::runtime_error("cannot read " + path);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        Check(pica_program_load(bytes.data(), bytes.size(), &program), "pica_program_load");
    }
    return ProgramPtr(program);
}

int Run(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: engine_adapter SHBIN|- DVLE INPUT\n");
        return 2;
    }
    PicaJitEngine engine(LoadProgram(argv[1]), std::stoul(argv[2]));

    std::vector<std::pair<unsigned, Vec4>> fu;
    std::vector<std::pair<unsigned, std::array<uint8_t, 4>>> iu;
    std::vector<std::pair<unsigned, bool>> bu;
    std::vector<Registers> inputs;
    uint16_t mask = 0;
    std::ifstream in(argv[3]);
    if (!in) throw std::runtime_error(std::string("cannot read ") + argv[3]);
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string kind;
        unsigned n = 0;
        words >> kind;
        if (kind == "vertex") {
            inputs.emplace_back();
            for (auto& reg : inputs.back()) reg = {0, 0, 0, 0};
        } else if (kind == "f" || kind == "v") {
            Vec4 v{};
            words >> n;
            for (float& c : v) {
                uint32_t b = 0;
                words >> std::hex >> b >> std::dec;
                c = FromBits(b);
            }
            if (kind == "f") {
                fu.emplace_back(n, v);
            } else {
                if (inputs.empty() || n > 15) throw std::runtime_error("bad input line: " + line);
                inputs.back()[n] = v;
                mask |= static_cast<uint16_t>(1u << n);
            }
        } else if (kind == "i") {
            unsigned a, b, c, d;
            words >> n >> a >> b >> c >> d;
            iu.emplace_back(n, std::array<uint8_t, 4>{uint8_t(a), uint8_t(b), uint8_t(c), uint8_t(d)});
        } else if (kind == "b") {
            unsigned value = 0;
            words >> n >> value;
            bu.emplace_back(n, value != 0);
        }
    }

    engine.SetupDraw(fu, iu, bu);
    std::vector<EmittedVertex> emitted;
    engine.SetGeometrySink([&emitted](const EmittedVertex& v) { emitted.push_back(v); });

    // Per-vertex path: what is printed.
    std::vector<Registers> outputs(inputs.size());
    PicaBatchSummary counted{};
    for (size_t v = 0; v < inputs.size(); v++) {
        PicaStop stop = engine.RunVertex(inputs[v], mask, outputs[v]);
        counted.vertices++;
        switch (stop) {
            case PICA_STOP_END: counted.ended++; break;
            case PICA_STOP_END_OF_CODE: counted.ended_at_end_of_code++; break;
            case PICA_STOP_BUDGET_EXCEEDED: counted.budget_exceeded++; break;
            case PICA_STOP_BREAK_OUTSIDE_LOOP: counted.break_outside_loop++; break;
        }
    }
    std::vector<EmittedVertex> per_vertex_emits;
    per_vertex_emits.swap(emitted);

    // Batch path: must agree bit for bit.
    std::vector<Registers> batch_outputs;
    PicaBatchSummary summary = engine.RunBatch(inputs, mask, batch_outputs);
    bool same = summary.vertices == counted.vertices && summary.ended == counted.ended &&
                summary.ended_at_end_of_code == counted.ended_at_end_of_code &&
                summary.budget_exceeded == counted.budget_exceeded &&
                summary.break_outside_loop == counted.break_outside_loop &&
                emitted.size() == per_vertex_emits.size() &&
                std::memcmp(batch_outputs.data(), outputs.data(), outputs.size() * sizeof(Registers)) == 0;
    for (size_t i = 0; same && i < emitted.size(); i++) {
        same = std::memcmp(&emitted[i].outputs, &per_vertex_emits[i].outputs, sizeof(Registers)) == 0 &&
               emitted[i].id == per_vertex_emits[i].id && emitted[i].primitive == per_vertex_emits[i].primitive &&
               emitted[i].winding == per_vertex_emits[i].winding;
    }
    if (!same) {
        std::fprintf(stderr, "engine_adapter: batch and per-vertex runs differ\n");
        return 1;
    }

    for (size_t i = 0; i < per_vertex_emits.size(); i++) {
        const auto& e = per_vertex_emits[i];
        std::printf("emit %zu id=%u primitive=%u winding=%u\n", i, e.id, unsigned(e.primitive), unsigned(e.winding));
        PrintRegisters(e.outputs);
    }
    for (size_t v = 0; v < outputs.size(); v++) {
        std::printf("vertex %zu\n", v);
        PrintRegisters(outputs[v]);
    }
    std::printf("summary vertices=%zu end=%zu end_of_code=%zu budget=%zu break=%zu\n", counted.vertices,
                counted.ended, counted.ended_at_end_of_code, counted.budget_exceeded, counted.break_outside_loop);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return Run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "engine_adapter: %s\n", e.what());
        return 1;
    }
}
