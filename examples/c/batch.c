/* Runs a batch of vertices through pica-jit's C API and prints every output
 * register and emitted vertex as raw f32 bits.
 *
 *   batch SHBIN|- DVLE INPUT [auto|interp|jit]
 *
 * SHBIN is a .shbin file, or - for pica-jit's embedded default shader. INPUT is
 * a text file of lines (floats as 8 hex digits of their f32 bits):
 *   f N x y z w    float uniform cN (applied after the DVLE's constants)
 *   i N x y z w    integer uniform iN (decimal bytes)
 *   b N 0|1        boolean uniform bN
 *   vertex         starts the next vertex
 *   v N x y z w    input register vN of the current vertex
 * Every vertex starts from a zero state (the CLI's `run` semantics). The optional
 * last argument picks the engine (default auto).
 * scripts/c-examples.py compares the output with `pica-jit run`. */
#include "pica_jit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VERTICES 4096

static float bits_to_float(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

static int check(PicaStatus status, const char *what) {
    if (status != PICA_STATUS_OK) {
        fprintf(stderr, "batch: %s failed (status %d): %s\n", what, (int)status, pica_last_error());
        exit(1);
    }
    return 0;
}

static void print_registers(const float regs[16][4]) {
    for (int r = 0; r < 16; r++) {
        printf("o%d", r);
        for (int c = 0; c < 4; c++) printf(" %08" PRIx32, float_to_bits(regs[r][c]));
        printf("\n");
    }
}

static size_t emit_count;

static void print_emit(void *user, const PicaEmittedVertex *vertex) {
    (void)user;
    printf("emit %zu id=%u primitive=%u winding=%u\n", emit_count++, vertex->vertex_id,
           vertex->primitive, vertex->winding);
    print_registers(vertex->outputs);
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, used = 0;
    unsigned char *data = malloc(cap);
    size_t n;
    while (data && (n = fread(data + used, 1, cap - used, f)) > 0) {
        used += n;
        if (used == cap) data = realloc(data, cap *= 2);
    }
    fclose(f);
    *len = used;
    return data;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: batch SHBIN|- DVLE INPUT [auto|interp|jit]\n");
        return 2;
    }
    uint32_t engine = PICA_ENGINE_AUTO;
    if (argc == 5) {
        if (strcmp(argv[4], "interp") == 0) {
            engine = PICA_ENGINE_INTERPRETER;
        } else if (strcmp(argv[4], "jit") == 0) {
            engine = PICA_ENGINE_JIT;
        } else if (strcmp(argv[4], "auto") != 0) {
            fprintf(stderr, "batch: unknown engine %s\n", argv[4]);
            return 2;
        }
    }
    PicaProgram *program = NULL;
    if (strcmp(argv[1], "-") == 0) {
        check(pica_program_load_default(&program), "pica_program_load_default");
    } else {
        size_t len = 0;
        unsigned char *bytes = read_file(argv[1], &len);
        if (!bytes) {
            fprintf(stderr, "batch: cannot read %s\n", argv[1]);
            return 1;
        }
        check(pica_program_load(bytes, len, &program), "pica_program_load");
        free(bytes);
    }
    size_t dvle = (size_t)strtoul(argv[2], NULL, 10);

    PicaShaderOptions options;
    check(pica_shader_options_default(&options), "pica_shader_options_default");
    options.dvle = dvle;
    options.engine = engine;
    PicaShader *shader = NULL;
    check(pica_shader_new(program, &options, &shader), "pica_shader_new");

    PicaUniforms *uniforms = NULL;
    check(pica_uniforms_new(&uniforms), "pica_uniforms_new");
    check(pica_uniforms_apply_constants(uniforms, program, dvle), "pica_uniforms_apply_constants");

    static float inputs[MAX_VERTICES][16][4];
    static float outputs[MAX_VERTICES][16][4];
    size_t count = 0;
    uint16_t input_mask = 0;

    FILE *in = fopen(argv[3], "r");
    if (!in) {
        fprintf(stderr, "batch: cannot read %s\n", argv[3]);
        return 1;
    }
    char line[256];
    while (fgets(line, sizeof line, in)) {
        unsigned n;
        uint32_t x[4];
        unsigned ix[4];
        if (strncmp(line, "vertex", 6) == 0) {
            if (count == MAX_VERTICES) {
                fprintf(stderr, "batch: more than %d vertices\n", MAX_VERTICES);
                return 1;
            }
            count++;
        } else if (sscanf(line, "f %u %" SCNx32 " %" SCNx32 " %" SCNx32 " %" SCNx32, &n, &x[0], &x[1], &x[2], &x[3]) == 5) {
            float v[4] = {bits_to_float(x[0]), bits_to_float(x[1]), bits_to_float(x[2]), bits_to_float(x[3])};
            check(pica_uniforms_set_float(uniforms, n, v), "pica_uniforms_set_float");
        } else if (sscanf(line, "i %u %u %u %u %u", &n, &ix[0], &ix[1], &ix[2], &ix[3]) == 5) {
            uint8_t v[4] = {(uint8_t)ix[0], (uint8_t)ix[1], (uint8_t)ix[2], (uint8_t)ix[3]};
            check(pica_uniforms_set_int(uniforms, n, v), "pica_uniforms_set_int");
        } else if (sscanf(line, "b %u %u", &n, &ix[0]) == 2) {
            check(pica_uniforms_set_bool(uniforms, n, (uint8_t)ix[0]), "pica_uniforms_set_bool");
        } else if (sscanf(line, "v %u %" SCNx32 " %" SCNx32 " %" SCNx32 " %" SCNx32, &n, &x[0], &x[1], &x[2], &x[3]) == 5) {
            if (count == 0 || n > 15) {
                fprintf(stderr, "batch: bad input line: %s", line);
                return 1;
            }
            for (int c = 0; c < 4; c++) inputs[count - 1][n][c] = bits_to_float(x[c]);
            input_mask |= (uint16_t)(1u << n);
        }
    }
    fclose(in);

    PicaState *state = NULL;
    check(pica_state_new(&state), "pica_state_new");
    PicaBatchSummary summary;
    check(pica_shader_run_vertices(shader, uniforms, &inputs[0][0][0], count, input_mask,
                                   &outputs[0][0][0], 0xffff, PICA_STATE_POLICY_RESET, state,
                                   print_emit, NULL, &summary),
          "pica_shader_run_vertices");
    for (size_t v = 0; v < count; v++) {
        printf("vertex %zu\n", v);
        print_registers((const float(*)[4])outputs[v]);
    }
    printf("summary vertices=%zu end=%zu end_of_code=%zu budget=%zu break=%zu\n", summary.vertices,
           summary.ended, summary.ended_at_end_of_code, summary.budget_exceeded,
           summary.break_outside_loop);

    check(pica_state_free(state), "pica_state_free");
    check(pica_uniforms_free(uniforms), "pica_uniforms_free");
    check(pica_shader_free(shader), "pica_shader_free");
    check(pica_program_free(program), "pica_program_free");
    return 0;
}
