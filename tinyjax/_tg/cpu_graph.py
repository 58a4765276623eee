"""A graph executor for tinygrad's CPU device: the kernels of a compiled linear launched by one call into compiled code.

tinygrad launches each CPU kernel from Python (a ctypes call per kernel and per core, ~5-20 us with its argument
marshalling). Here the launches of a run of kernels are written once into a command table, one row per launch (the
kernel's address, then its arguments: buffer addresses and variable values), and one small C function compiled once
per process runs the table. A replay writes only the addresses of its new buffers (and the step index) into the rows
that take them. The same function runs a loop (`Loop`: a struct naming a body table, a step count, the patches written
before each step: the index and the carry buffers, swapped by pointer, and a while_loop's condition, read after each
condition's launches), so a lax loop does not return to Python between steps. A row may itself run a loop (the
executor's own address, the loop's struct: a nested loop), a lax.switch (the rows of the branch an index names), or a
LAPACK solve (getrf and two trsm, through scipy's
LAPACK and BLAS function pointers, the routines its Python wrappers call). The kernels stay tinygrad's, compiled by
tinygrad; only the launching moves into C.

Needs the CPU device's clang (what tinygrad compiles CPU kernels with); without it, or when the compiled object fails
its checks (`_load`: an undefined symbol, the entry point, a self-test of a loop and a solve), `executor()` is None and
the Python launches run as before (DEBUG=1 says why).
"""
from __future__ import annotations
import ctypes, functools, hashlib, shutil
from typing import Any, Union, cast
import numpy as np
from scipy.linalg import cython_blas, cython_lapack, lapack
from tinygrad import Device
from tinygrad.device import TinyELF
from tinygrad.helpers import DEBUG, getenv
from tinygrad.runtime.ops_cpu import CPUProgram
from tinygrad.runtime.support.compiler_cpu import ClangCompiler
from tinyjax._tg.compile import symbols

# tinyjax_exec(l, what) runs the loop struct l (see `Loop`) and returns the number of steps run; tinyjax_exec(0, what)
# returns the address of a function a row can call: the loop runner (what 0; its struct the first argument), lu_solve
# (what 1) or the switch runner (what 2: the rows of one of several tables, by an index read from a buffer). A patch
# (5 words: target address, kind, x, y, z) is written before each step j: kind 0 writes x + y*j (an index, y may be -1
# in two's complement), kind 1 writes z at j == 0 and then x for even j, y for odd j (a carry buffer swapped by
# pointer). A copy (5 words: destination, sources after 0 / an even / an odd number of steps, bytes) runs after the
# loop (a while_loop's carry into its outputs). lu_solve is linalg's _lu_solve: getrf on a column-major copy of a, b's rows permuted by the
# interchanges, trsm with L (unit diagonal) and with U, per matrix of a batch (b's matrices bs elements apart).
# A row whose first word is 1 heads a parallel group: the next rows (its second word: how many), one kernel's rows per
# core (tinygrad's THREAD optimization, which tinygrad's CPUProgram runs one after the other), run at once, on threads
# made by libc's pthread_create (its third word) and joined (pthread_join, its fourth); a thread that cannot be made runs
# its row on the caller.
_SRC = r"""
typedef unsigned long long u64;
typedef void (*k15)(u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64);
typedef void (*k63)(u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,
  u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,
  u64,u64,u64,u64,u64,u64,u64);
typedef struct { u64 *c, n, w, steps, *p, np, *cond, nc; unsigned char *pred; u64 *cp, ncp, kb, kc, *count; } loop;
static void lu_solve(u64 getrf, u64 trsm, u64 dbl, u64 n, u64 k, u64 batch, u64 out, u64 a, u64 b, u64 work, u64 ipiv, u64 bs);
static u64 exec_loop(loop *l);
static void exec_switch(u64 *s);
static void gemm(u64 *s, u64 p0, u64 p1, u64 p2);
static void cholesky(u64 potrf, u64 dbl, u64 n, u64 batch, u64 out, u64 a, u64 work);
static void tri_solve(u64 trsm, u64 dbl, u64 m, u64 k, u64 na, u64 batch, u64 flags, u64 out, u64 a, u64 b, u64 work);
static void lu(u64 getrf, u64 dbl, u64 m, u64 n, u64 batch, u64 out, u64 pivots, u64 perm, u64 a, u64 work, u64 ipiv);
static void factor(u64 *s, u64 o0, u64 o1, u64 o2, u64 a);
static void fft(u64 *s, u64 o0, u64 o1, u64 i0, u64 i1);
static void expm(u64 *s, u64 out, u64 a);
typedef int (*pcreate_t)(u64 *, void *, void *(*)(void *), void *);
typedef int (*pjoin_t)(u64, void **);
typedef struct { u64 *c, w; } job;
static void *run_row(void *p);
static inline __attribute__((always_inline)) void rows(u64 *c, u64 n, u64 w) {
  for (u64 i = 0; i < n; i++, c += w) {
    if (c[0] == 1) {   // a parallel group: the next c[1] rows (one kernel's cores) at once, c[2]/c[3] pthread_create/join
      u64 k = c[1] < 64 ? c[1] : 64, th[64];
      job jobs[64];
      int made[64];
      for (u64 t = 1; t < k; t++) { jobs[t].c = c + (t + 1) * w; jobs[t].w = w; made[t] = ((pcreate_t)c[2])(&th[t], 0, run_row, &jobs[t]) == 0; }
      jobs[0].c = c + w; jobs[0].w = w;
      run_row(&jobs[0]);
      for (u64 t = 1; t < k; t++) { if (made[t]) ((pjoin_t)c[3])(th[t], 0); else run_row(&jobs[t]); }
      for (u64 t = k; t < c[1]; t++) { jobs[0].c = c + (t + 1) * w; run_row(&jobs[0]); }   // (over 64 cores: in turn)
      i += c[1]; c += c[1] * w;
      continue;
    }
    if (w <= 16) ((k15)c[0])(c[1],c[2],c[3],c[4],c[5],c[6],c[7],c[8],c[9],c[10],c[11],c[12],c[13],c[14],c[15]);
    else ((k63)c[0])(c[1],c[2],c[3],c[4],c[5],c[6],c[7],c[8],c[9],c[10],c[11],c[12],c[13],c[14],c[15],c[16],c[17],c[18],c[19],c[20],
      c[21],c[22],c[23],c[24],c[25],c[26],c[27],c[28],c[29],c[30],c[31],c[32],c[33],c[34],c[35],c[36],c[37],c[38],c[39],c[40],c[41],
      c[42],c[43],c[44],c[45],c[46],c[47],c[48],c[49],c[50],c[51],c[52],c[53],c[54],c[55],c[56],c[57],c[58],c[59],c[60],c[61],c[62],
      c[63]);
  }
}
u64 tinyjax_exec(loop *l, u64 what) {   // first in the image: its entry point (statics' addresses need no GOT)
  if (!l) return what == 0 ? (u64)&exec_loop : what == 1 ? (u64)&lu_solve : what == 2 ? (u64)&exec_switch : what == 3 ? (u64)&gemm
                 : what == 4 ? (u64)&cholesky : what == 5 ? (u64)&tri_solve : what == 6 ? (u64)&lu : what == 7 ? (u64)&factor
                 : what == 8 ? (u64)&fft : (u64)&expm;
  return exec_loop(l);
}
static void *run_row(void *p) { job *j = (job *)p; rows(j->c, 1, j->w); return 0; }
static u64 exec_loop(loop *l) {
  u64 j = 0;
  for (; j < l->steps; j++) {
    for (u64 k = 0; k < l->np; k++) {
      u64 *q = l->p + 5 * k;
      *(u64 *)q[0] = q[1] == 0 ? q[2] + q[3] * j : (j == 0 ? q[4] : ((j & 1) ? q[3] : q[2]));
    }
    if (l->nc) { rows(l->cond, l->nc, l->w); *l->count += l->kc; if (!*l->pred) break; }
    rows(l->c, l->n, l->w);
    *l->count += l->kb;
  }
  for (u64 k = 0; k < l->ncp; k++) {
    u64 *q = l->cp + 5 * k;
    volatile unsigned char *d = (unsigned char *)q[0], *s = (unsigned char *)(j == 0 ? q[1] : ((j & 1) ? q[3] : q[2]));
    if (s && s != d) for (u64 i = 0; i < q[4]; i++) d[i] = s[i];
  }
  return j;
}
static void exec_switch(u64 *s) {   // index (a signed integer's address), branches k, width, the count's address, the index's
  long long i = s[4] == 8 ? *(long long *)s[0] : s[4] == 4 ? *(int *)s[0] : s[4] == 2 ? *(short *)s[0] : *(signed char *)s[0];
  u64 b = i < 0 ? 0 : ((u64)i >= s[1] ? s[1] - 1 : (u64)i), *t = s + 5 + 3 * b;   // bytes, then per branch its table, rows
  rows((u64 *)t[0], t[1], s[2]);                                                 // and kernels; the index clamped, as JAX
  *(u64 *)s[3] += t[2];
}
typedef void (*getrf_t)(int *, int *, void *, int *, int *, int *);
typedef void (*trsm_t)(char *, char *, char *, char *, int *, int *, void *, void *, int *, void *, int *);
// one solve of the batch in T: column-major copies of a and of b's rows in their permuted order (as scipy's wrappers
// make them), getrf, then two trsm
#define LU_SOLVE_ONE(T, ONE) { \
  T one = ONE, *A = (T *)a + m * n * n, *B = (T *)b + m * bs, *O = (T *)out + m * n * k, *wa = (T *)work, *wb = wa + n * n; \
  for (u64 i = 0; i < n; i++) for (u64 j = 0; j < n; j++) wa[j * n + i] = A[i * n + j]; \
  ((getrf_t)getrf)(&N, &N, wa, &N, piv, &info); \
  for (u64 i = 0; i < n; i++) perm[i] = (int)i; \
  for (u64 i = 0; i < n; i++) { int t = perm[i]; perm[i] = perm[piv[i] - 1]; perm[piv[i] - 1] = t; } \
  for (u64 i = 0; i < n; i++) for (u64 j = 0; j < k; j++) wb[j * n + i] = B[(u64)perm[i] * k + j]; \
  ((trsm_t)trsm)(&L, &L, &No, &U, &N, &K, &one, wa, &N, wb, &N); \
  ((trsm_t)trsm)(&L, &U, &No, &No, &N, &K, &one, wa, &N, wb, &N); \
  for (u64 i = 0; i < n; i++) for (u64 j = 0; j < k; j++) O[i * k + j] = wb[j * n + i]; \
}
static void lu_solve(u64 getrf, u64 trsm, u64 dbl, u64 n, u64 k, u64 batch, u64 out, u64 a, u64 b, u64 work, u64 ipiv, u64 bs) {
  int N = (int)n, K = (int)k, info = 0, *piv = (int *)ipiv, *perm = piv + n;
  char L = 'L', U = 'U', No = 'N';
  for (u64 m = 0; m < batch; m++) {
    if (dbl) LU_SOLVE_ONE(double, 1.0) else LU_SOLVE_ONE(float, 1.0f)
  }
}
typedef void (*potrf_t)(char *, int *, void *, int *, int *);
// one factor of the batch in T: potrf('L') on a column-major copy of a (as scipy's wrapper makes it), the lower
// triangle out, zeros above (clean=1); NaN in the lower triangle when it fails (info != 0), as linalg's LapackCholesky
#define CHOLESKY_ONE(T, NAN_) { \
  T *A = (T *)a + m * n * n, *O = (T *)out + m * n * n, *w = (T *)work; \
  for (u64 i = 0; i < n; i++) for (u64 j = 0; j < n; j++) w[j * n + i] = A[i * n + j]; \
  ((potrf_t)potrf)(&L, &N, w, &N, &info); \
  for (u64 i = 0; i < n; i++) for (u64 j = 0; j < n; j++) O[i * n + j] = j > i ? (T)0 : info ? NAN_ : w[j * n + i]; \
}
static void cholesky(u64 potrf, u64 dbl, u64 n, u64 batch, u64 out, u64 a, u64 work) {
  int N = (int)n, info = 0;
  char L = 'L';
  for (u64 m = 0; m < batch; m++) {
    if (dbl) CHOLESKY_ONE(double, __builtin_nan("")) else CHOLESKY_ONE(float, __builtin_nanf(""))
  }
}
// one triangular solve of the batch in T: BLAS trsm on column-major copies of a (na x na) and b (m x k), as scipy's
// wrapper makes them; flags: the side, uplo, transa and diag characters, a byte each
#define TRI_SOLVE_ONE(T) { \
  T one = 1, *A = (T *)a + q * na * na, *B = (T *)b + q * m * k, *O = (T *)out + q * m * k, *wa = (T *)work, *wb = wa + na * na; \
  for (u64 i = 0; i < na; i++) for (u64 j = 0; j < na; j++) wa[j * na + i] = A[i * na + j]; \
  for (u64 i = 0; i < m; i++) for (u64 j = 0; j < k; j++) wb[j * m + i] = B[i * k + j]; \
  ((trsm_t)trsm)(&S, &U, &Tr, &D, &M, &K, &one, wa, &NA, wb, &M); \
  for (u64 i = 0; i < m; i++) for (u64 j = 0; j < k; j++) O[i * k + j] = wb[j * m + i]; \
}
static void tri_solve(u64 trsm, u64 dbl, u64 m, u64 k, u64 na, u64 batch, u64 flags, u64 out, u64 a, u64 b, u64 work) {
  int M = (int)m, K = (int)k, NA = (int)na;
  char S = (char)flags, U = (char)(flags >> 8), Tr = (char)(flags >> 16), D = (char)(flags >> 24);
  for (u64 q = 0; q < batch; q++) {
    if (dbl) TRI_SOLVE_ONE(double) else TRI_SOLVE_ONE(float)
  }
}
// one LU of the batch in T: getrf on a column-major copy of a (m x n), the packed factors out, the 0-based
// interchanges (int32, min(m, n)) and the permutation they make (int32, m), as linalg's LapackLu
#define LU_ONE(T) { \
  T *A = (T *)a + q * m * n, *O = (T *)out + q * m * n, *w = (T *)work; \
  int *P = (int *)pivots + q * r, *Q = (int *)perm + q * m; \
  for (u64 i = 0; i < m; i++) for (u64 j = 0; j < n; j++) w[j * m + i] = A[i * n + j]; \
  ((getrf_t)getrf)(&M, &N, w, &M, piv, &info); \
  for (u64 i = 0; i < m; i++) for (u64 j = 0; j < n; j++) O[i * n + j] = w[j * m + i]; \
  for (u64 i = 0; i < m; i++) Q[i] = (int)i; \
  for (u64 i = 0; i < r; i++) { int p = piv[i] - 1, t = Q[i]; P[i] = p; Q[i] = Q[p]; Q[p] = t; } \
}
static void lu(u64 getrf, u64 dbl, u64 m, u64 n, u64 batch, u64 out, u64 pivots, u64 perm, u64 a, u64 work, u64 ipiv) {
  int M = (int)m, N = (int)n, info = 0, *piv = (int *)ipiv;
  u64 r = m < n ? m : n;
  for (u64 q = 0; q < batch; q++) {
    if (dbl) LU_ONE(double) else LU_ONE(float)
  }
}
// QR (geqrf, orgqr), eigh (syevd), SVD (gesdd) and eig (real geev) of a batch, as linalg's LapackQr, LapackEigh,
// LapackSvd and LapackEig call scipy's wrappers: on column-major copies, with the workspace sizes they use (given in
// s); outputs o0-o2 row-major. s: the kind (0 QR, 1 eigh, 2 SVD, 3 eig), float64?, m, n, batch, lwork, lwork2 /
// liwork, work, work2 / iwork, then per kind: QR: the columns of q (kq); SVD: jobz, u's columns, vt's rows, the number
// of outputs (1: s alone); eig: left?, right?, then the outputs' addresses (w's parts, then vl's and vr's asked for),
// each complex vector as its real and imaginary parts, a conjugate pair of eigenvalues (positive imaginary part first)
// sharing geev's columns j, j + 1 as v_j = x + iy, v_j+1 = x - iy (linalg's _unpack_pairs)
typedef void (*geqrf_t)(int *, int *, void *, int *, void *, void *, int *, int *);
typedef void (*orgqr_t)(int *, int *, int *, void *, int *, void *, void *, int *, int *);
typedef void (*syevd_t)(char *, char *, int *, void *, int *, void *, void *, int *, int *, int *, int *);
typedef void (*gesdd_t)(char *, int *, int *, void *, int *, void *, void *, int *, void *, int *, void *, int *, int *, int *);
typedef void (*geev_t)(char *, char *, int *, void *, int *, void *, void *, void *, int *, void *, int *, void *, int *, int *);
#define FACTOR_ONE(T, NAN_) { \
  T *A = (T *)a + q * m * n, *W = (T *)s[10], *X = (T *)s[11], *wk = (T *)s[8]; \
  for (u64 i = 0; i < m; i++) for (u64 j = 0; j < n; j++) W[j * m + i] = A[i * n + j]; \
  if (kind == 0) { \
    u64 kq = s[13], r = m < n ? m : n; \
    T *Q = (T *)o0 + q * m * kq, *R = (T *)o1 + q * kq * n, *tau = X; \
    ((geqrf_t)s[14])(&M, &N, W, &M, tau, wk, &L1, &info); \
    for (u64 i = 0; i < kq; i++) for (u64 j = 0; j < n; j++) R[i * n + j] = j >= i ? W[j * m + i] : (T)0; \
    T *qw = X + r; \
    for (u64 j = 0; j < kq; j++) for (u64 i = 0; i < m; i++) qw[j * m + i] = j < n ? W[j * m + i] : (T)0; \
    int KQ = (int)kq, K = (int)r; \
    ((orgqr_t)s[15])(&M, &KQ, &K, qw, &M, tau, wk, &L2, &info); \
    for (u64 i = 0; i < m; i++) for (u64 j = 0; j < kq; j++) Q[i * kq + j] = qw[j * m + i]; \
  } else if (kind == 1) { \
    T *V = (T *)o0 + q * n * n, *E = (T *)o1 + q * n; \
    ((syevd_t)s[14])(&Vc, &Lc, &N, W, &N, X, wk, &L1, (int *)s[9], &L2, &info); \
    for (u64 i = 0; i < n; i++) for (u64 j = 0; j < n; j++) V[i * n + j] = info ? NAN_ : W[j * n + i]; \
    for (u64 i = 0; i < n; i++) E[i] = info ? NAN_ : X[i]; \
  } else if (kind == 3) { \
    u64 left = s[13], right = s[14]; \
    int LDVL = left ? N : 1, LDVR = right ? N : 1; \
    char JL = left ? 'V' : 'N', JR = right ? 'V' : 'N'; \
    T *WR = X, *WI = X + n, *VL = WI + n, *VR = VL + (left ? n * n : 1), *Wr = (T *)s[16] + q * n, *Wi = (T *)s[17] + q * n; \
    ((geev_t)s[15])(&JL, &JR, &N, W, &N, WR, WI, VL, &LDVL, VR, &LDVR, wk, &L1, &info); \
    for (u64 i = 0; i < n; i++) { Wr[i] = info ? NAN_ : WR[i]; Wi[i] = info ? NAN_ : WI[i]; } \
    for (u64 v = 0; v < left + right; v++) { \
      T *V = v == 0 && left ? VL : VR, *Re = (T *)s[18 + 2 * v] + q * n * n, *Im = (T *)s[19 + 2 * v] + q * n * n; \
      for (u64 j = 0; j < n; j++) { \
        int pair = WI[j] > 0 && j + 1 < n; \
        for (u64 i = 0; i < n; i++) { \
          T x = V[j * n + i], y = pair ? V[(j + 1) * n + i] : (T)0; \
          Re[i * n + j] = info ? NAN_ : x; Im[i * n + j] = info ? NAN_ : y; \
          if (pair) { Re[i * n + j + 1] = info ? NAN_ : x; Im[i * n + j + 1] = info ? NAN_ : (T)0 - y; } \
        } \
        j += pair; \
      } \
    } \
  } else { \
    u64 r = m < n ? m : n, uc = s[14], vr = s[15], outs = s[16]; \
    char jobz = (char)s[13]; \
    int LDU = (int)m, LDVT = (int)(vr ? vr : 1); \
    T *U = X + r, *VT = U + m * uc; \
    ((gesdd_t)s[17])(&jobz, &M, &N, W, &M, X, U, &LDU, VT, &LDVT, wk, &L1, (int *)s[9], &info); \
    T *So = (T *)(outs == 1 ? o0 : o1) + q * r; \
    for (u64 i = 0; i < r; i++) So[i] = info ? NAN_ : X[i]; \
    if (outs == 3) { \
      T *Uo = (T *)o0 + q * m * uc, *Vo = (T *)o2 + q * vr * n; \
      for (u64 i = 0; i < m; i++) for (u64 j = 0; j < uc; j++) Uo[i * uc + j] = info ? NAN_ : U[j * m + i]; \
      for (u64 i = 0; i < vr; i++) for (u64 j = 0; j < n; j++) Vo[i * n + j] = info ? NAN_ : VT[j * vr + i]; \
    } \
  } \
}
static void factor(u64 *s, u64 o0, u64 o1, u64 o2, u64 a) {
  u64 kind = s[0], m = s[2], n = s[3];
  int M = (int)m, N = (int)n, L1 = (int)s[5], L2 = (int)s[6], info = 0;
  char Vc = 'V', Lc = 'L';
  for (u64 q = 0; q < s[4]; q++) {
    if (s[1]) FACTOR_ONE(double, __builtin_nan("")) else FACTOR_ONE(float, __builtin_nanf(""))
  }
}
// an FFT of a batch as lax.fft's FftCall runs it: numpy's pocketfft gufunc loop (numpy.fft's own, `fft_loop`) on
// interleaved complex numbers; the real and imaginary parts are separate buffers here, interleaved into scratch a and
// out of scratch b. s: the loop, its data, the FFT type (0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT), float64?, batch, the input's
// and the output's lengths (complex or real numbers), the normalisation (a T in the word), a, b
typedef void (*gufunc_t)(char **, long long *, long long *, void *);
#define FFT_RUN(T) { \
  T *A = (T *)s[8], *B = (T *)s[9], *I0 = (T *)i0, *I1 = (T *)i1, *O0 = (T *)o0, *O1 = (T *)o1; \
  long long es = sizeof(T), dims[3] = {(long long)batch, (long long)nin, (long long)nout}, steps[5]; \
  char *args[3]; \
  if (typ != 2) for (u64 i = 0; i < batch * nin; i++) { A[2 * i] = I0[i]; A[2 * i + 1] = I1[i]; } \
  args[0] = typ == 2 ? (char *)I0 : (char *)A; args[1] = (char *)&s[7]; args[2] = typ == 3 ? (char *)O0 : (char *)B; \
  steps[0] = (long long)nin * (typ == 2 ? es : 2 * es); steps[1] = 0; steps[2] = (long long)nout * (typ == 3 ? es : 2 * es); \
  steps[3] = typ == 2 ? es : 2 * es; steps[4] = typ == 3 ? es : 2 * es; \
  ((gufunc_t)s[0])(args, dims, steps, (void *)s[1]); \
  if (typ != 3) for (u64 i = 0; i < batch * nout; i++) { O0[i] = B[2 * i]; O1[i] = B[2 * i + 1]; } \
}
static void fft(u64 *s, u64 o0, u64 o1, u64 i0, u64 i1) {
  u64 typ = s[2], batch = s[4], nin = s[5], nout = s[6];
  if (s[3]) FFT_RUN(double) else FFT_RUN(float)
}
typedef void (*sgemm_t)(char *, char *, int *, int *, int *, float *, float *, int *, float *, int *, float *, float *, int *);
typedef void (*dgemm_t)(char *, char *, int *, int *, int *, double *, double *, int *, double *, int *, double *, double *, int *);
// s: the routine, float64?, transa, transb, m, n, k, lda, ldb, ldc, the positions of C, A, B among p0-p2, their offsets
// (elements), loops, then per loop its size and the strides of C, A, B: C = op(A) op(B) (column-major) at each index
static void gemm(u64 *s, u64 p0, u64 p1, u64 p2) {
  u64 p[3] = {p0, p1, p2}, es = s[1] ? 8 : 4, nl = s[16], *L = s + 17, total = 1;
  char ta = (char)s[2], tb = (char)s[3];
  int m = (int)s[4], n = (int)s[5], k = (int)s[6], lda = (int)s[7], ldb = (int)s[8], ldc = (int)s[9];
  u64 c = p[s[10]] + s[13] * es, a = p[s[11]] + s[14] * es, b = p[s[12]] + s[15] * es;
  for (u64 i = 0; i < nl; i++) total *= L[4 * i];
  for (u64 t = 0; t < total; t++) {
    u64 r = t, oc = 0, oa = 0, ob = 0;
    for (u64 i = nl; i-- > 0;) { u64 j = r % L[4 * i]; r /= L[4 * i]; oc += j * L[4 * i + 1]; oa += j * L[4 * i + 2]; ob += j * L[4 * i + 3]; }
    if (s[1]) { double one = 1.0, zero = 0.0;
      ((dgemm_t)s[0])(&ta, &tb, &m, &n, &k, &one, (double *)(a + oa * es), &lda, (double *)(b + ob * es), &ldb, &zero, (double *)(c + oc * es), &ldc);
    } else { float one = 1.0f, zero = 0.0f;
      ((sgemm_t)s[0])(&ta, &tb, &m, &n, &k, &one, (float *)(a + oa * es), &lda, (float *)(b + ob * es), &ldb, &zero, (float *)(c + oc * es), &ldc);
    }
  }
}
// expm of a batch of (n, n) matrices as linalg's LapackExpm (JAX's scaling and squaring): the L1 norm (column sums in
// order, as numpy's sum over axis 0), the squarings floor(log2(norm / maxnorm)) (the exponent of the quotient, in T),
// the Pade degree by the norm's thresholds, the products by BLAS gemm (row-major C = A B as column-major C^T = B^T A^T),
// their sums term by term in _pade_np's order (no contraction into FMAs), solve(Q, P) by LU (lu_solve) or, for upper
// triangular input, trsm (tri_solve), then the squarings. NaN when the norm is not finite or needs more squarings than
// allowed. s: float64?, n, batch, upper?, max squarings, maxnorm (a double's bits), thresholds (4 doubles' bits; their
// count), degrees (5), gemm, getrf, trsm, work (13 n^2 T), solve work (2 n^2 doubles), pivots (2n ints), coefficients
// (14 doubles per degree 3, 5, 7, 9, 13)
#define MM(T, C, A, B) { T one_ = 1, zero_ = 0; ((gemm_t)s[16])(&No, &No, &N, &N, &N, &one_, B, &N, A, &N, &zero_, C, &N); }
#define EXPM_ONE(T, EXPBITS, BIAS, UT, NAN_) { \
  T *A = (T *)a + q * nn, *O = (T *)out + q * nn, *X = (T *)s[19], *A2 = X + nn, *A4 = A2 + nn, *A6 = A4 + nn, *A8 = A6 + nn, \
    *U = A8 + nn, *V = U + nn, *W = V + nn, *P = W + nn, *Q = P + nn, *R = Q + nn, *R2 = R + nn, l1 = 0; \
  int bad = 0; \
  for (u64 j = 0; j < n; j++) { \
    T c = 0; \
    for (u64 i = 0; i < n; i++) { T x = A[i * n + j]; c = c + (x < 0 ? -x : x); } \
    if (!(c - c == 0)) bad = 1; else if (c > l1) l1 = c; \
  } \
  T t = l1 / (T)md[5]; \
  UT bits; __builtin_memcpy(&bits, &t, sizeof(T)); \
  long long e = (long long)((bits >> (sizeof(T) == 8 ? 52 : 23)) & EXPBITS) - BIAS, nsq = t >= 1 ? e : 0; \
  if (bad || nsq > (long long)s[4]) { for (u64 i = 0; i < nn; i++) O[i] = NAN_; continue; } \
  T p2 = 1; \
  for (long long k = 0; k < nsq; k++) p2 = p2 * 2; \
  for (u64 i = 0; i < nn; i++) X[i] = A[i] / p2; \
  u64 di = 0; \
  for (u64 k = 0; k < s[10]; k++) if ((double)l1 >= md[6 + k]) di++; \
  u64 m = s[11 + di]; \
  double *b = (double *)s[22] + 14 * (m == 3 ? 0 : m == 5 ? 1 : m == 7 ? 2 : m == 9 ? 3 : 4); \
  MM(T, A2, X, X) \
  if (m >= 5 || m == 13) MM(T, A4, A2, A2) \
  if (m >= 7) MM(T, A6, A4, A2) \
  if (m == 9) MM(T, A8, A6, A2) \
  if (m == 13) { \
    for (u64 i = 0; i < nn; i++) { T w = (T)b[13] * A6[i]; w = w + (T)b[11] * A4[i]; W[i] = w + (T)b[9] * A2[i]; } \
    MM(T, P, A6, W) \
    for (u64 i = 0; i < nn; i++) { T w = P[i] + (T)b[7] * A6[i]; w = w + (T)b[5] * A4[i]; w = w + (T)b[3] * A2[i]; \
                                   W[i] = w + (T)b[1] * (T)(i % (n + 1) == 0); } \
    MM(T, U, X, W) \
    for (u64 i = 0; i < nn; i++) { T w = (T)b[12] * A6[i]; w = w + (T)b[10] * A4[i]; W[i] = w + (T)b[8] * A2[i]; } \
    MM(T, P, A6, W) \
    for (u64 i = 0; i < nn; i++) { T w = P[i] + (T)b[6] * A6[i]; w = w + (T)b[4] * A4[i]; w = w + (T)b[2] * A2[i]; \
                                   V[i] = w + (T)b[0] * (T)(i % (n + 1) == 0); } \
  } else { \
    T *E[5] = {0, A2, A4, A6, A8}; \
    for (u64 i = 0; i < nn; i++) { \
      T id = (T)(i % (n + 1) == 0), w = (T)b[1] * id, v = (T)b[0] * id; \
      for (u64 k = 1; k <= m / 2; k++) { w = w + (T)b[2 * k + 1] * E[k][i]; v = v + (T)b[2 * k] * E[k][i]; } \
      W[i] = w; V[i] = v; \
    } \
    MM(T, U, X, W) \
  } \
  for (u64 i = 0; i < nn; i++) { P[i] = U[i] + V[i]; Q[i] = V[i] - U[i]; } \
  if (s[3]) tri_solve(s[18], s[0], n, n, n, 1, (u64)'L' | (u64)'U' << 8 | (u64)'N' << 16 | (u64)'N' << 24, (u64)R, (u64)Q, (u64)P, s[20]); \
  else lu_solve(s[17], s[18], s[0], n, n, 1, (u64)R, (u64)Q, (u64)P, s[20], s[21], nn); \
  for (long long k = 0; k < nsq; k++) { MM(T, R2, R, R) T *tmp = R; R = R2; R2 = tmp; } \
  for (u64 i = 0; i < nn; i++) O[i] = R[i]; \
}
typedef void (*gemm_t)(char *, char *, int *, int *, int *, void *, void *, int *, void *, int *, void *, void *, int *);
static void expm(u64 *s, u64 out, u64 a) {
  #pragma clang fp contract(off)
  u64 n = s[1], nn = n * n;
  double *md = (double *)s;   // (the words holding doubles' bits)
  int N = (int)n;
  char No = 'N';
  for (u64 q = 0; q < s[2]; q++) {
    if (s[0]) EXPM_ONE(double, 0x7ff, 1023, unsigned long long, __builtin_nan("")) else EXPM_ONE(float, 0xff, 127, unsigned int, __builtin_nanf(""))
  }
}
"""

WIDTH_SMALL, WIDTH_LARGE = 16, 64
# the functions a row can call, in the order tinyjax_exec(0, what) gives their addresses
ROUTINES = ("exec_loop", "lu_solve", "exec_switch", "gemm", "cholesky", "tri_solve", "lu", "factor", "fft", "expm")

def routine(device: str, name: str) -> int:
  """The address of the executor's function `name` (one of ROUTINES) for this CPU device (an executor must exist)."""
  return _executor(device.split(":")[0])[2 + ROUTINES.index(name)]

@functools.cache
def _executor(device: str) -> Any:
  dev = Device[device]
  if not isinstance(prg_t := getattr(dev, "runtime_t", None), type) or not issubclass(prg_t, CPUProgram): return None
  if shutil.which(getenv("CC", "clang")) is None: return None
  try: return _load(dev, _SRC)
  except Exception as e:   # a failure is the Python launches (cached: not compiled again per call), never a wrong run
    if DEBUG >= 1: print(f"tinyjax: the CPU graph executor is off, kernels launch from Python: {type(e).__name__}: {e}")
    return None

def _load(dev: Any, src: str) -> tuple:
  """The executor compiled from `src` and checked: (program, entry, loop runner, lu_solve, switch runner). Raises when
  the object is not the one expected: a symbol it does not define (tinygrad's loader would look it up in libm and
  libgcc_s, and clang drops a call to an undefined static function), `tinyjax_exec` not at the image's first byte
  (where CPUProgram enters), the routines not the object's, or a small loop, switch and solve computing wrong values."""
  compiler = ClangCompiler(args := dev.renderer.target.arch.split(","))
  # kept in tinygrad's disk cache even with CCACHE=0 (which is about the user's kernels): it is tinyjax's runtime, as
  # jaxlib's is compiled once, and clang takes ~2.5 s over it (most of a cold solver setup's)
  compiler.cachekey = "tinyjax_cpu_graph_" + hashlib.sha256(" ".join(args).encode()).hexdigest()[:12]
  lib = compiler.compile_cached(src)
  where = symbols(lib)   # raises on an undefined symbol
  if where.get("tinyjax_exec") != 0: raise RuntimeError("tinyjax_exec is not at the image's first byte")
  prg = CPUProgram(dev, TinyELF(lib, "tinyjax_exec", dev.renderer.target, ()))
  fn = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64)(prg.addr)
  entries = tuple(fn(0, i) for i in range(len(ROUTINES)))
  if entries != tuple(prg.addr + where.get(n, -prg.addr) for n in ROUTINES):
    raise RuntimeError(f"tinyjax_exec does not return the object's {', '.join(ROUTINES)}")
  _self_test(fn, *entries)
  return prg, fn, *entries

def _self_test(fn, loop_fn: int, lu_fn: int, switch_fn: int, gemm_fn: int, cholesky_fn: int, tri_fn: int, lu_only_fn: int,
               factor_fn: int, fft_fn: int, expm_fn: int) -> None:
  """Three steps of a loop whose row is a switch, with both kinds of patch and a copy; a float64 and a float32 solve;
  a batch of two float64 and float32 matrix products, C^T = B^T A^T, A transposed; a batch of two float64 and float32
  Cholesky factors, the second failing; a triangular solve from the right with a transposed a; an LU with a pivot; a
  QR, an eigendecomposition and an SVD (`Factor`). (The FFT row is checked with numpy's loop it calls: `pocketfft_loop`.)"""
  def addr(a: np.ndarray, i: int = 0) -> int: return a.ctypes.data + a.itemsize * i
  w, count = np.zeros(6, np.uint64), np.zeros(1, np.uint64)   # w: index, swapped word, copy's target, its 3 sources
  w[3:] = 7, 8, 9
  empty = np.zeros(16, np.uint64)
  switch = np.array([addr(w), 2, 16, addr(count), 8, addr(empty), 0, 100, addr(empty), 0, 1], np.uint64)
  body = np.zeros(16, np.uint64)
  body[:2] = switch_fn, addr(switch)
  patches = np.array([addr(w), 0, _MASK, 1, 0, addr(w, 1), 1, 10, 11, 12], np.uint64)   # index -1 + j; 12, 11, 10
  copy = np.array([addr(w, 2), addr(w, 3), addr(w, 4), addr(w, 5), 8], np.uint64)   # after 3 steps: the odd source, 9
  loop = np.array([addr(body), 1, 16, 3, addr(patches), 2, 0, 0, 0, addr(copy), 1, 1, 0, addr(count)], np.uint64)
  outer = np.zeros(16, np.uint64)
  outer[:2] = loop_fn, addr(loop)   # the loop as a nested row of a one-step loop
  top = np.array([addr(outer), 1, 16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, addr(count)], np.uint64)
  steps = fn(addr(top), 0)
  if (steps, w[:3].tolist(), int(count[0])) != (1, [1, 10, 9], 100 + 100 + 1 + 3):
    raise RuntimeError(f"the loop self-test ran {steps} steps, left {w[:3].tolist()}, counted {int(count[0])}")
  if (group := parallel_group(3, PARALLEL_WORK)) is not None:   # three rows at once, each a switch counting into a word of its own
    counts, zero = np.zeros(3, np.uint64), np.zeros(1, np.int64)
    subs = [np.array([addr(zero), 1, 16, addr(counts, i), 8, addr(empty), 0, 10 * i + 1], np.uint64) for i in range(3)]
    par = np.zeros(4 * 16, np.uint64)
    par[0], par[1:4] = group[0], group[1]
    for i, sub in enumerate(subs): par[16 * (i + 1):16 * (i + 1) + 2] = switch_fn, addr(sub)
    fn(addr(np.array([addr(par), 4, 16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, addr(count)], np.uint64)), 0)
    if counts.tolist() != [1, 11, 21]: raise RuntimeError(f"the parallel rows' self-test counted {counts.tolist()}")
  solve = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 12)(lu_fn)
  a64, b64 = np.array([[0.5, 2.0], [3.0, 1.0]]), np.array([[1.0], [2.0]])   # a pivot: rows swapped
  for double in (True, False):
    a, b = (a64, b64) if double else (a64.astype(np.float32), b64.astype(np.float32))
    out, work, ipiv = np.zeros_like(b), np.zeros(6, np.float64), np.zeros(4, np.int32)
    p = "d" if double else "s"
    solve(_capi("lapack", p + "getrf"), _capi("blas", p + "trsm"), int(double), 2, 1, 1, addr(out), addr(a), addr(b), addr(work),
          addr(ipiv), 2)
    if not np.allclose(out, np.linalg.solve(a64, b64), rtol=1e-5): raise RuntimeError(f"the {p}getrf solve self-test gave {out.ravel()}")
  gemm = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 4)(gemm_fn)
  x64, y64 = np.arange(12.0).reshape(2, 3, 2) - 4, np.arange(18.0).reshape(2, 3, 3) / 4   # out[i] = x[i]^T @ y[i]
  for double in (True, False):
    x, y = (x64, y64) if double else (x64.astype(np.float32), y64.astype(np.float32))
    out = np.zeros((2, 2, 3), x.dtype)
    # row-major out (2 x 3) is column-major C = out^T (3 x 2) = y^T x: A = y (y^T's columns are y's rows: N, lda 3),
    # B = x (x's rows contiguous: T, ldb 2); C is argument 1, A 2, B 0; one loop of 2, strides 6, 9, 6
    spec = np.array([blas_routine("dgemm" if double else "sgemm"), int(double), ord("N"), ord("T"), 3, 2, 3, 3, 2, 3, 1, 2, 0, 0, 0, 0,
                     1, 2, 6, 9, 6], np.uint64)
    gemm(spec.ctypes.data, addr(x), addr(out), addr(y))
    if not np.allclose(out, np.swapaxes(x64, 1, 2) @ y64): raise RuntimeError(f"the gemm self-test gave {out.ravel()}")
  chol = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 7)(cholesky_fn)
  spd = np.array([[[4.0, 99.0], [2.0, 5.0]], [[1.0, 0.0], [3.0, 1.0]]])   # (the upper triangle is not read)
  for double in (True, False):
    a = spd if double else spd.astype(np.float32)
    out, work = np.full_like(a, 7.0), np.zeros(4, np.float64)
    chol(_capi("lapack", "dpotrf" if double else "spotrf"), int(double), 2, 2, addr(out), addr(a), addr(work))
    if not (np.array_equal(out[0], [[2.0, 0.0], [1.0, 2.0]]) and np.isnan(out[1][np.tril_indices(2)]).all() and out[1, 0, 1] == 0):
      raise RuntimeError(f"the potrf self-test gave {out.ravel()}")
  tri = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 11)(tri_fn)
  lu = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 11)(lu_only_fn)
  l64, rhs64 = np.array([[2.0, 0.0], [1.0, 4.0]]), np.array([[2.0, 8.0], [6.0, 4.0], [0.0, 4.0]])   # x l^T = rhs
  for double in (True, False):
    l, rhs = (l64, rhs64) if double else (l64.astype(np.float32), rhs64.astype(np.float32))
    out, work = np.zeros_like(rhs), np.zeros(10, np.float64)
    flags = ord("R") | ord("L") << 8 | ord("T") << 16 | ord("N") << 24
    tri(_capi("blas", "dtrsm" if double else "strsm"), int(double), 3, 2, 2, 1, flags, addr(out), addr(l), addr(rhs), addr(work))
    if not np.allclose(out, rhs64 @ np.linalg.inv(l64.T)): raise RuntimeError(f"the trsm self-test gave {out.ravel()}")
    a = np.array([[1.0, 2.0], [4.0, 2.0], [2.0, 1.0]], out.dtype)   # 3 x 2: the second row is the first pivot
    packed, piv, perm, ipiv = np.zeros_like(a), np.zeros(2, np.int32), np.zeros(3, np.int32), np.zeros(2, np.int32)
    lu(_capi("lapack", "dgetrf" if double else "sgetrf"), int(double), 3, 2, 1, addr(packed), addr(piv), addr(perm), addr(a), addr(work),
       addr(ipiv))
    if (piv.tolist(), perm.tolist()) != ([1, 1], [1, 0, 2]) or not np.allclose(packed, np.array([[4, 2], [0.25, 1.5], [0.5, 0]])):
      raise RuntimeError(f"the getrf self-test gave {packed.ravel()}, {piv}, {perm}")
  factor = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 5)(factor_fn)
  m = np.array([[2.0, 1.0], [1.0, 2.0], [0.0, 2.0]])
  for double in (True, False):
    dt = np.float64 if double else np.float32
    a, q, r, v, w, s = m.astype(dt), np.zeros((3, 2), dt), np.zeros((2, 2), dt), np.zeros((2, 2), dt), np.zeros(2, dt), np.zeros(2, dt)
    for fac, outs, x in ((Factor(None, "qr", double, 3, 2, 1, 2, "", 0, 0, 0), (q, r), a),
                          (Factor(None, "eigh", double, 2, 2, 1, 0, "", 0, 0, 0), (v, w), a[:2].copy()),
                          (Factor(None, "svd", double, 3, 2, 1, 0, "N", 0, 0), (s,), a)):
      factor(fac.spec.ctypes.data, *[addr(o) for o in outs], *[0] * (3 - len(outs)), addr(x))
    if not (np.allclose(q @ r, m) and np.allclose(w, [1, 3]) and np.allclose(np.abs(v), np.sqrt(0.5)) and np.allclose(s, np.linalg.svd(m)[1])):
      raise RuntimeError(f"the geqrf/syevd/gesdd self-test gave {q.ravel()}, {r.ravel()}, {w}, {v.ravel()}, {s}")
    # eig of [[0, -1], [1, 0]] (+-i: a conjugate pair) and of diag(2, 3) after it (a batch of two; right vectors)
    rot = np.array([[[0.0, -1.0], [1.0, 0.0]], [[2.0, 0.0], [0.0, 3.0]]], dt)
    parts = [np.zeros((2, 2), dt), np.zeros((2, 2), dt), np.zeros((2, 2, 2), dt), np.zeros((2, 2, 2), dt)]
    fac = Factor(None, "eig", double, 2, 2, 2, 0, "R", *[addr(o) for o in parts], 0)
    factor(fac.spec.ctypes.data, 0, 0, 0, addr(rot))
    ev, vec = parts[0] + 1j * parts[1], parts[2] + 1j * parts[3]
    if not (np.allclose(ev, np.array([[1j, -1j], [2, 3]])) and np.allclose(rot[0] @ vec[0], vec[0] * ev[0])
            and np.allclose(np.abs(vec[1]), np.eye(2))):
      raise RuntimeError(f"the geev self-test gave {ev.ravel()}, {vec.ravel()}")
    # expm by Pade degree 3 alone: a general matrix (LU) with three squarings, an upper triangular one (trsm), a NaN
    ea = np.array([[[0.1, 0.2], [-0.3, 0.4]], [[1.0, 2.0], [0.0, 3.0]], [[np.nan, 0.0], [0.0, 1.0]]], dt)
    want = np.array([[[1.0686, 0.2552], [-0.3828, 1.4514]], [[2.7183, 17.3673], [0.0, 20.0855]]])   # (scipy.linalg.expm)
    out = np.zeros_like(ea)
    exp_ = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 3)(expm_fn)
    for i, upper in ((0, False), (1, True), (2, False)):
      row = Expm(None, double, 2, 1, upper, 8, 0.5, (), (3,), {d: (120.0, 60.0, 12.0, 1.0) for d in (3, 5, 7, 9, 13)}, 0, 0)
      exp_(row.spec.ctypes.data, addr(out, 4 * i), addr(ea, 4 * i))
    if not (np.allclose(out[:2], want, rtol=3e-3) and np.isnan(out[2]).all()): raise RuntimeError(f"the expm self-test gave {out.ravel()}")

def executor(device: str) -> Any:
  """The compiled entry point for this CPU device (shared by its `CPU:n` views), or None: not a tinygrad CPU device,
  no clang, or an executor that failed its checks (`_load`)."""
  if not isinstance(device, str) or not device.startswith("CPU"): return None
  try: return _executor(device.split(":")[0])
  except Exception: return None   # no device here: the Python launches run

Slot = tuple[str, int]    # ("slot", s): the address of buffer s of whatever runs the table, written per run
Value = Union[int, Slot]  # a word's value: fixed, or a slot's
Word = tuple[np.ndarray, int, int]   # (array, index, slot): this word takes slot's address

class Nested:
  """A row that runs more than a kernel (a loop, a LAPACK call): its words, and the words of its own arrays that take
  a slot's address."""
  row: list[Value]
  slot_words: list[Word]
  keep: Any = None   # what the words' addresses belong to (steps, scratch buffers): held as long as the row
  def _words(self, values: list[Value]) -> np.ndarray:
    """values as an array; each slot among them recorded as a word of it."""
    a = np.zeros(len(values), np.uint64)
    for i, v in enumerate(values):
      if isinstance(v, tuple): self.slot_words.append((a, i, v[1]))
      else: a[i] = v & _MASK
    return a

class Commands:
  """The launches of a run of CPU kernels (and `Nested` rows) as one table of command rows. The words a run fills in
  are `slot_words` ((array, index, input slot): a buffer's address, in the table or a nested row's arrays) and
  `var_words` ((index, variable name)); every other word (kernel addresses, fixed buffers' addresses, constant values,
  core ids) is written once."""
  def __init__(self, launches: list, kernels: int, width: int = 0):
    """launches: (kernel address, its arguments) or a `Nested`, one per row; `kernels`: how many kernels they launch
    (a kernel running on several cores has a row per core)."""
    rows = [(l.row[0], l.row[1:]) if isinstance(l, Nested) else l for l in launches]
    width = max(width, 1 + max(len(a) for _, a in rows))
    assert width <= WIDTH_LARGE, f"CPU programs take at most {WIDTH_LARGE - 1} arguments"
    self.launches, self.kernels = launches, kernels
    self.width, self.n = (WIDTH_SMALL if width <= WIDTH_SMALL else WIDTH_LARGE), len(rows)
    self.table = np.zeros(self.n * self.width, np.uint64)
    self.slot_words: list[Word] = [w for l in launches if isinstance(l, Nested) for w in l.slot_words]
    self.var_words: list[tuple[int, str]] = []
    for i, (addr, args) in enumerate(rows):
      self.table[i * self.width] = addr
      for j, a in enumerate(args, start=i * self.width + 1):
        if isinstance(a, tuple):
          if a[0] == "slot": self.slot_words.append((self.table, j, a[1]))
          else: self.var_words.append((j, a[1]))
        else: self.table[j] = a & _MASK
    self.loop: Loop | None = None   # (run's struct, made on first run)

  def fill(self, addrs: list[int], var_vals: dict[str, int]) -> None:
    """Write this run's buffer addresses (by input slot) and variable values into the table."""
    for a, w, s in self.slot_words: a[w] = addrs[s]
    t = self.table
    for w, v in self.var_words: t[w] = var_vals[v]

def prepare(device: str, commands: Commands) -> Commands:
  """The commands with the executor's struct that runs them once."""
  if commands.loop is None: commands.loop = Loop(device, commands, 1, [])
  return commands

def run(device: str, commands: Commands) -> int:
  """Launch the table's rows once, in order (on a device `executor` gave an entry point for); the kernels launched
  (nested loops' included)."""
  return run_loop(device, cast(Loop, prepare(device, commands).loop))[1]

class Loop(Nested):
  """A loop as the executor's struct: `body`'s rows run `steps` times (a while_loop: until `cond`'s rows, run before
  each step, leave 0 at `pred`), `patches` ((array, index) of a word of the body's or cond's table or of a nested row's,
  kind, x, y, z: see _SRC) written before each step, `copies` (destination, sources after 0 / an even / an odd number
  of steps, bytes) after the loop. Its row runs it as a nested loop. Both tables have the same width."""
  def __init__(self, device: str, body: Commands, steps: int, patches: list[tuple[tuple[np.ndarray, int], int, Value, Value, Value]],
               cond: Commands | None = None, pred: Value = 0, copies: list[tuple[Value, Value, Value, Value, int]] | None = None,
               words: list[Word] | None = None):
    """`words`: words of the tables that take a slot's address (of what runs this loop) but are the same every step."""
    self.body, self.cond, self.slot_words = body, cond, list(words or [])
    copies = copies or []
    self.p = self._words([v for (a, i), k, x, y, z in patches for v in (a.ctypes.data + 8 * i, k, x, y, z)])
    self.cp = self._words([v for c in copies for v in c])
    self.struct = self._words([body.table.ctypes.data, body.n, body.width, steps, self.p.ctypes.data, len(patches),
                               0 if cond is None else cond.table.ctypes.data, 0 if cond is None else cond.n, pred,
                               self.cp.ctypes.data, len(copies), body.kernels, 0 if cond is None else cond.kernels, _COUNT.ctypes.data])
    self.row = [routine(device, "exec_loop"), self.struct.ctypes.data]
    self.address = self.struct.ctypes.data

class LuSolve(Nested):
  """A row running linalg's LAPACK solve (getrf, trsm, trsm) of a (batch, n, n) by b (batch, n, k) into `out`, in
  float64 (`double`) or float32, with work arrays of its own; b None: by the identity (an inverse). Its slots are words
  of its row (Commands places them)."""
  def __init__(self, device: str, double: bool, n: int, k: int, batch: int, out: Value, a: Value, b: Value | None = None):
    p = "d" if double else "s"
    self.work, self.ipiv, self.slot_words = np.zeros(n * (n + k), np.float64), np.zeros(2 * n, np.int32), []
    self.eye = np.eye(n, dtype=np.float64 if double else np.float32)
    self.row = [routine(device, "lu_solve"), _capi("lapack", p + "getrf"), _capi("blas", p + "trsm"), int(double), n, k, batch,
                out, a, self.eye.ctypes.data if b is None else b, self.work.ctypes.data, self.ipiv.ctypes.data, 0 if b is None else n * k]

class Cholesky(Nested):
  """A row running linalg's LAPACK Cholesky factor (potrf) of a batch of (n, n) matrices into `out`, in float64
  (`double`) or float32, with a work array of its own."""
  def __init__(self, device: str, double: bool, n: int, batch: int, out: Value, a: Value):
    self.work, self.slot_words = np.zeros(n * n, np.float64), []
    self.row = [routine(device, "cholesky"), _capi("lapack", "dpotrf" if double else "spotrf"), int(double), n, batch, out, a,
                self.work.ctypes.data]

class TriangularSolve(Nested):
  """A row running linalg's BLAS triangular solve (trsm) of a batch of (na, na) a by (m, k) b into `out`; `chars`:
  trsm's side, uplo, transa and diag."""
  def __init__(self, device: str, double: bool, m: int, k: int, na: int, batch: int, chars: str, out: Value, a: Value, b: Value):
    self.work, self.slot_words = np.zeros(na * na + m * k, np.float64), []
    flags = sum(ord(c) << (8 * i) for i, c in enumerate(chars))
    self.row = [routine(device, "tri_solve"), _capi("blas", "dtrsm" if double else "strsm"), int(double), m, k, na, batch, flags,
                out, a, b, self.work.ctypes.data]

class Lu(Nested):
  """A row running linalg's LAPACK LU (getrf) of a batch of (m, n) matrices: the packed factors, the 0-based
  interchanges and the permutation (int32)."""
  def __init__(self, device: str, double: bool, m: int, n: int, batch: int, out: Value, pivots: Value, perm: Value, a: Value):
    self.work, self.ipiv, self.slot_words = np.zeros(m * n, np.float64), np.zeros(min(m, n), np.int32), []
    self.row = [routine(device, "lu"), _capi("lapack", "dgetrf" if double else "sgetrf"), int(double), m, n, batch, out,
                pivots, perm, a, self.work.ctypes.data, self.ipiv.ctypes.data]

class Factor(Nested):
  """A row running linalg's QR (`kind` "qr": geqrf, orgqr; q with `kq` columns), symmetric eigendecomposition ("eigh":
  syevd), SVD ("svd": gesdd; `jobz` A, S or N) or eigendecomposition of a real matrix ("eig": geev; `jobz` holds L for
  the left eigenvectors, R for the right) of a batch of (m, n) matrices, with the workspace sizes scipy's wrappers use
  there (their queries, asked once here), and work arrays of its own."""
  def __init__(self, device: str | None, kind: str, double: bool, m: int, n: int, batch: int, kq: int, jobz: str, *values: Value):
    p, dt, r = "d" if double else "s", np.float64 if double else np.float32, min(m, n)
    outs, a = list(values[:-1]), values[-1]
    extra: list[Value]
    if kind == "qr":   # work: geqrf's, then orgqr's; scratch: tau, then q
      l1 = int(getattr(lapack, p + "geqrf_lwork")(m, n)[0])
      l2 = int(getattr(lapack, p + "orgqr")(np.zeros((m, kq), dt, order="F"), np.zeros(r, dt), lwork=-1)[1][0])
      extra, scratch, iwork = [kq, _capi("lapack", p + "geqrf"), _capi("lapack", p + "orgqr")], r + m * kq, 0
    elif kind == "eigh":   # (scipy's syevd defaults: lwork 1 + 6n + 2n^2, liwork 3 + 5n); scratch: the eigenvalues
      l1, l2 = 1 + 6 * n + 2 * n * n, 3 + 5 * n
      extra, scratch, iwork = [0, _capi("lapack", p + "syevd")], n, l2
    elif kind == "eig":   # scratch: wr, wi, vl, vr; the outputs' addresses are words of the spec (up to six)
      left, right = int("L" in jobz), int("R" in jobz)
      l1 = max(int(getattr(lapack, p + "geev_lwork")(n, compute_vl=left, compute_vr=right)[0].real), 1)
      l2, scratch, iwork = 0, 2 * n + (n * n if left else 1) + (n * n if right else 1), 0
      extra, outs = [left, right, _capi("lapack", p + "geev"), *outs], []
    else:   # scratch: s, u, vt
      uc, vr = (m, n) if jobz == "A" else (r, r) if jobz == "S" else (0, 0)
      l1 = int(getattr(lapack, p + "gesdd_lwork")(m, n, compute_uv=int(jobz != "N"), full_matrices=int(jobz == "A"))[0])
      l2, extra, scratch, iwork = 0, [ord(jobz), uc, vr, len(outs), _capi("lapack", p + "gesdd")], r + m * max(uc, 1) + max(vr, 1) * n, 8 * r
    self.work = np.zeros(max(l1, l2 if kind == "qr" else 0, 1), dt)
    self.a, self.x = np.zeros(m * n, dt), np.zeros(max(scratch, 1), dt)
    self.iwork, self.slot_words = np.zeros(max(iwork, 1), np.int32), []
    self.spec = self._words([{"qr": 0, "eigh": 1, "svd": 2, "eig": 3}[kind], int(double), m, n, batch, l1, l2, 0, self.work.ctypes.data,
                             self.iwork.ctypes.data, self.a.ctypes.data, self.x.ctypes.data, 0, *extra])
    # (no device: the spec alone, for the executor's self-test)
    self.row = [] if device is None else [routine(device, "factor"), self.spec.ctypes.data, *outs, *[0] * (3 - len(outs)), a]

class Expm(Nested):
  """A row running linalg's LapackExpm (JAX's scaling and squaring: see the C routine) of a batch of (n, n) matrices
  into `out`: `upper` triangular input solved by trsm, at most `max_squarings` squarings; `maxnorm`, the norm thresholds
  `conds` and their `degrees`, and the Pade coefficients `pade` (degree -> 14 or fewer) are linalg's."""
  def __init__(self, device: str | None, double: bool, n: int, batch: int, upper: bool, max_squarings: int, maxnorm: float,
               conds: tuple[float, ...], degrees: tuple[int, ...], pade: dict[int, tuple[float, ...]], out: Value, a: Value):
    p = "d" if double else "s"
    self.work, self.solve_work = np.zeros(13 * n * n, np.float64), np.zeros(2 * n * n, np.float64)
    self.ipiv, self.slot_words = np.zeros(2 * n, np.int32), []
    self.coef = np.zeros((5, 14), np.float64)
    for i, d in enumerate((3, 5, 7, 9, 13)): self.coef[i, :len(pade[d])] = pade[d]
    words = np.zeros(4, np.float64)
    words[:len(conds)] = conds
    self.spec = self._words([int(double), n, batch, int(upper), max_squarings, int(np.float64(maxnorm).view(np.uint64)),
                             *[int(w) for w in words.view(np.uint64)], len(conds), *degrees, *[0] * (5 - len(degrees)),
                             _capi("blas", p + "gemm"), _capi("lapack", p + "getrf"), _capi("blas", p + "trsm"), self.work.ctypes.data,
                             self.solve_work.ctypes.data, self.ipiv.ctypes.data, self.coef.ctypes.data])
    self.row = [] if device is None else [routine(device, "expm"), self.spec.ctypes.data, out, a]

class Fft(Nested):
  """A row running lax.fft's FFT (`typ`: 0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT; one axis) of a batch through numpy's
  pocketfft loop (`pocketfft_loop`), with scratch arrays of its own: the outputs (the real and imaginary parts; IRFFT's
  one real output), then the inputs (RFFT's one real input)."""
  def __init__(self, device: str | None, typ: int, double: bool, batch: int, nin: int, nout: int, *values: Value,
               loop: tuple[int, int] | None = None):
    """`loop`: the gufunc loop and its data (pocketfft_loop's, looked up when not given)."""
    dt = np.float64 if double else np.float32
    fn, data = loop or pocketfft_loop(_FFT_UFUNCS[typ] if typ != 2 else "rfft_n_odd" if nin % 2 else "rfft_n_even", double)
    fct = np.zeros(1, np.uint64)
    fct.view(dt)[0] = 1 / (nin if typ == 1 else nout) if typ in (1, 3) else 1   # (numpy.fft's 1/n, rounded to T)
    self.a, self.b, self.slot_words = np.zeros(max(2 * batch * nin, 1), dt), np.zeros(max(2 * batch * nout, 1), dt), []
    self.spec = self._words([fn, data, typ, int(double), batch, nin, nout, int(fct[0]), self.a.ctypes.data, self.b.ctypes.data])
    outs, ins = (values[:1], values[1:]) if typ == 3 else (values[:2], values[2:])
    self.row = [] if device is None else [routine(device, "fft"), self.spec.ctypes.data, outs[0], outs[1] if len(outs) > 1 else 0,
                                          ins[0], ins[1] if len(ins) > 1 else 0]

_FFT_UFUNCS = ("fft", "ifft", "rfft", "irfft")
_NPY_TYPES = {"f": 11, "d": 12, "g": 13, "F": 14, "D": 15, "G": 16}   # numpy's type numbers (NPY_FLOAT ... NPY_CLONGDOUBLE)

@functools.cache
def pocketfft_loop(name: str, double: bool) -> tuple[int, int]:
  """The addresses of numpy.fft's gufunc loop `name` (numpy.fft._pocketfft_umath: fft, ifft, rfft_n_even, rfft_n_odd,
  irfft) for float64 (`double`) or float32 and of its data, read from the ufunc object (numpy's PyUFuncObject, whose
  fields `functions`, `data`, `ntypes`, `name` and `types` follow the object's header), after checks that they are the
  ufunc's own: its name, its type signatures, and a transform through the executor's `fft` routine equal to numpy's.
  Raises otherwise (no row: the FFT runs from Python)."""
  from numpy.fft import _pocketfft_umath as pfu   # type: ignore[attr-defined]
  u = getattr(pfu, name)
  base, word, int32 = id(u) + object.__basicsize__, ctypes.c_uint64, ctypes.c_int32   # (the header: refcount, type)
  nin, nout, nargs = (int32.from_address(base + 4 * i).value for i in range(3))
  functions, data = word.from_address(base + 16).value, word.from_address(base + 24).value
  ntypes = int32.from_address(base + 32).value
  cname, types = word.from_address(base + 40).value, word.from_address(base + 48).value
  if (nin, nout, nargs, ntypes) != (u.nin, u.nout, u.nargs, u.ntypes) or not cname or ctypes.string_at(cname) != name.encode() or not types:
    raise RuntimeError(f"numpy's ufunc {name} does not have the layout expected")
  sigs = ["".join(s.replace("->", "")) for s in u.types]
  if list(ctypes.string_at(types, nargs * ntypes)) != [_NPY_TYPES.get(c, -1) for s in sigs for c in s]:
    raise RuntimeError(f"numpy's ufunc {name} does not have the types {u.types}")
  want = {"fft": "DdD", "ifft": "DdD", "rfft_n_even": "ddD", "rfft_n_odd": "ddD", "irfft": "Ddd"}[name]
  i = sigs.index(want if double else want.translate(str.maketrans("dD", "fF")))
  loop, arg = word.from_address(functions + 8 * i).value, (word.from_address(data + 8 * i).value if data else 0)
  _fft_self_test(name, double, loop, arg)
  return loop, arg

def _fft_self_test(name: str, double: bool, loop: int, data: int) -> None:
  """A batch of two transforms of length 6 (7 for rfft_n_odd) through the executor's fft routine, equal to numpy's."""
  fn = _executor("CPU")
  if fn is None: raise RuntimeError("no executor")
  dt, n = (np.float64 if double else np.float32), 7 if name == "rfft_n_odd" else 6
  x: np.ndarray = (np.arange(2 * n) % 5 - 1.5).astype(dt).reshape(2, n)
  typ = {"fft": 0, "ifft": 1, "rfft_n_even": 2, "rfft_n_odd": 2, "irfft": 3}[name]
  z = x + np.multiply(x[::-1], 1j)
  want = {0: np.fft.fft(z), 1: np.fft.ifft(z), 2: np.fft.rfft(x), 3: np.fft.irfft(z[:, :n // 2 + 1], n)}[typ]
  nin = n // 2 + 1 if typ == 3 else n
  re, im = np.ascontiguousarray(z.real[:, :nin], dt), np.ascontiguousarray(z.imag[:, :nin], dt)
  o0, o1 = np.zeros(want.shape, dt), np.zeros(want.shape, dt)
  row = Fft(None, typ, double, 2, nin, want.shape[-1], 0, 0, 0, 0, loop=(loop, data))
  ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 5)(fn[2 + ROUTINES.index("fft")])(
    row.spec.ctypes.data, o0.ctypes.data, o1.ctypes.data, (x if typ == 2 else re).ctypes.data, im.ctypes.data)
  got = o0 if typ == 3 else o0 + 1j * o1
  if not np.allclose(got, want, rtol=1e-5, atol=1e-5): raise RuntimeError(f"the {name} row's self-test gave {got.ravel()}")

class Switch(Nested):
  """A row running one of `branches` (tables of one width), the one `index` (a signed integer of `size` bytes) names,
  clamped."""
  def __init__(self, device: str, index: Value, size: int, branches: list[Commands]):
    self.branches, self.slot_words = branches, []
    self.struct = self._words([index, len(branches), branches[0].width, _COUNT.ctypes.data, size] +
                              [v for b in branches for v in (b.table.ctypes.data, b.n, b.kernels)])
    self.row = [routine(device, "exec_switch"), self.struct.ctypes.data]

PARALLEL_WORK = 1 << 24   # a split kernel's rows run at once from this many iterations x operations (runtime._kernel_work)

def parallel_group(cores: int, work: int) -> tuple[int, list[int]] | None:
  """The row heading a kernel's `cores` rows, so that they run at once; None (they run in turn): one core, too little
  `work` (runtime._kernel_work), or no threads here."""
  return None if cores < 2 or work < PARALLEL_WORK or (p := _pthreads()) is None else (1, [cores, *p])

@functools.cache
def _pthreads() -> tuple[int, int] | None:
  """The addresses of libc's pthread_create and pthread_join, or None."""
  try:
    libc = ctypes.CDLL(None)
    return tuple(int(ctypes.cast(getattr(libc, f), ctypes.c_void_p).value or 0) for f in ("pthread_create", "pthread_join")) or None  # type: ignore[return-value]
  except (OSError, AttributeError): return None

def blas_routine(name: str) -> int:
  """The address of scipy's BLAS routine `name` (Fortran's calling convention: every argument a pointer)."""
  return _capi("blas", name)

@functools.cache
def _capi(lib: str, name: str) -> int:
  """The address of scipy's LAPACK/BLAS routine `name` (the capsules of scipy.linalg.cython_lapack / cython_blas)."""
  cap = (cython_lapack if lib == "lapack" else cython_blas).__pyx_capi__[name]
  get_name, get_ptr = ctypes.pythonapi.PyCapsule_GetName, ctypes.pythonapi.PyCapsule_GetPointer
  get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
  get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
  return int(get_ptr(cap, get_name(cap)))

_COUNT = np.zeros(1, np.uint64)   # kernels launched by the executor, every loop's struct adds to it

def run_loop(device: str, loop: Loop, steps: int | None = None) -> tuple[int, int]:
  """Run the loop (`steps`: this many instead of its own); (steps run, kernels launched)."""
  if steps is not None: loop.struct[3] = steps
  _COUNT[0] = 0
  done = _executor(device.split(":")[0])[1](loop.address, 0)
  return int(done), int(_COUNT[0])

_MASK = 0xFFFFFFFFFFFFFFFF
