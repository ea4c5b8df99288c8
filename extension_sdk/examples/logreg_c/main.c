/* logreg_c: logistic regression on the Wisconsin breast-cancer data (scikit-learn's CSV), in
 * C99 on Loom's stable ABI (loom/capi.h) and nothing else.
 *
 *     logreg_c <breast_cancer.csv> [epochs] [learning_rate]
 *
 * It splits the 569 samples 80/20 with a fixed seed, standardizes the 30 features with the
 * training split's mean and standard deviation (Loom ops), trains w [30, 1] and b [1] by
 * full-batch gradient descent on binary_cross_entropy_with_logits (autograd: Backward,
 * TensorGrad), prints the loss every 50 epochs and the final train/test accuracy.
 *
 * Exit status: 0 when the test accuracy reaches the floor below, 1 on a Loom error, 2 on a bad
 * command line or data file, 3 when the model is worse than the floor.
 *
 * Note [Statuses in a C client]: every fallible call goes through CHECK, which prints the call,
 * the line and the status's message, releases the status and jumps to the function's cleanup.
 * Every handle a function owns starts out NULL and is released at its cleanup label on both
 * paths (TensorRelease(NULL) is a no-op), so an error anywhere leaks nothing.
 */
#include <errno.h>
#include <loom/capi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/** The test accuracy below which the run counts as failed (the model reaches ~0.95). */
#define ACCURACY_FLOOR 0.90
/** Loss is printed every this many epochs. */
#define PRINT_EVERY 50

static const LoomApi* api;

/* Prints a failed call's status and releases it. */
static void report(LoomStatus* status, const char* call, int line) {
  fprintf(stderr, "logreg_c: line %d: %s failed (code %d): %s\n", line, call,
          (int)api->StatusCode(status), api->StatusMessage(status));
  api->StatusRelease(status);
}

/* See Note [Statuses in a C client]. */
#define CHECK(call)                           \
  do {                                        \
    LoomStatus* check_status_ = (call);       \
    if (check_status_) {                      \
      report(check_status_, #call, __LINE__); \
      goto cleanup;                           \
    }                                         \
  } while (0)

/* ---- boxed arguments ---- */

static LoomValue value_of_kind(LoomValueKind kind) {
  LoomValue v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.kind = kind;
  return v;
}
static LoomValue tensor_arg(LoomTensor* t) {
  LoomValue v = value_of_kind(LOOM_VALUE_TENSOR);
  v.u.tensor = t;
  return v;
}
static LoomValue float_arg(double f) {
  LoomValue v = value_of_kind(LOOM_VALUE_FLOAT);
  v.u.f = f;
  return v;
}
static LoomValue bool_arg(bool b) {
  LoomValue v = value_of_kind(LOOM_VALUE_BOOL);
  v.u.b = b;
  return v;
}
static LoomValue ints_arg(const int64_t* data, size_t size) {
  LoomValue v = value_of_kind(LOOM_VALUE_INT_LIST);
  v.u.ints.data = data;
  v.u.ints.size = size;
  return v;
}

/* The ops this program calls, found once by schema name. */
static struct {
  const LoomOp* addmm;    /* addmm(Tensor self, Tensor mat1, Tensor mat2, *, beta, alpha) */
  const LoomOp* bce;      /* binary_cross_entropy_with_logits(self, target, ...) */
  const LoomOp* mean_dim; /* mean.dim(self, int[1]? dim, bool keepdim) */
  const LoomOp* std_dim;  /* std.dim(self, int[1]? dim, bool unbiased, bool keepdim) */
  const LoomOp* sub;      /* sub.Tensor(self, other) */
  const LoomOp* div;      /* div.Tensor(self, other) */
  const LoomOp* sub_;     /* sub_.Tensor(self, other, *, alpha): the in-place update */
} ops;

static LoomStatus* find_ops(void) {
  LoomStatus* st = NULL;
  if ((st = api->OpFind("addmm", &ops.addmm))) return st;
  if ((st = api->OpFind("binary_cross_entropy_with_logits", &ops.bce))) return st;
  if ((st = api->OpFind("mean.dim", &ops.mean_dim))) return st;
  if ((st = api->OpFind("std.dim", &ops.std_dim))) return st;
  if ((st = api->OpFind("sub.Tensor", &ops.sub))) return st;
  if ((st = api->OpFind("div.Tensor", &ops.div))) return st;
  return api->OpFind("sub_.Tensor", &ops.sub_);
}

/* Calls op and hands back its one tensor return as a new reference in *out. */
static LoomStatus* call(const LoomOp* op, const LoomValue* args, size_t num_args,
                        LoomTensor** out) {
  LoomValue ret[1] = {
      value_of_kind(LOOM_VALUE_NONE)}; /* struct_size set: the library steps by it */
  size_t num_returns = 0;
  LoomStatus* st = api->OpCall(op, args, num_args, ret, 1, &num_returns);
  if (st) return st;
  if (num_returns != 1 || ret[0].kind != LOOM_VALUE_TENSOR || !ret[0].u.tensor) {
    api->ValuesRelease(ret, num_returns);
    return api->StatusCreate(LOOM_ERROR, "expected the op to return one defined tensor");
  }
  *out = api->TensorRetain(ret[0].u.tensor);
  api->ValuesRelease(ret, num_returns);
  return NULL;
}

/* ---- the data ---- */

typedef struct {
  int64_t n, d; /* samples, features */
  float* x;     /* [n, d] row-major */
  float* y;     /* [n] labels, 0 (malignant) or 1 (benign) */
} Dataset;

/* Reads scikit-learn's breast_cancer.csv: a line "569,30,malignant,benign", then one line per
 * sample with 30 features and the label. Returns 0, or 2 after printing why. */
static int read_csv(const char* path, Dataset* data) {
  FILE* f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "logreg_c: cannot open '%s': %s\n", path, strerror(errno));
    return 2;
  }
  int rc = 2;
  long n = 0, d = 0;
  char line[8192];
  if (!fgets(line, sizeof line, f) || sscanf(line, "%ld,%ld", &n, &d) != 2 || n <= 0 || d <= 0 ||
      n > 1000000 || d > 1000) {
    fprintf(stderr, "logreg_c: '%s' does not start with a 'samples,features,...' line\n", path);
    goto cleanup;
  }
  data->n = n;
  data->d = d;
  data->x = malloc(sizeof(float) * (size_t)(n * d));
  data->y = malloc(sizeof(float) * (size_t)n);
  if (!data->x || !data->y) {
    fprintf(stderr, "logreg_c: out of memory reading '%s'\n", path);
    goto cleanup;
  }
  for (long i = 0; i < n; ++i) {
    if (!fgets(line, sizeof line, f)) {
      fprintf(stderr, "logreg_c: '%s' ends after %ld of %ld samples\n", path, i, n);
      goto cleanup;
    }
    char* p = line;
    for (long j = 0; j <= d; ++j) {
      char* end = NULL;
      const double v = strtod(p, &end);
      if (end == p || (j < d && *end != ',')) {
        fprintf(stderr, "logreg_c: '%s' line %ld: expected %ld comma-separated numbers\n", path,
                i + 2, d + 1);
        goto cleanup;
      }
      if (j < d) {
        data->x[i * d + j] = (float)v;
      } else if (v != 0.0 && v != 1.0) {
        fprintf(stderr, "logreg_c: '%s' line %ld: the label is %g, expected 0 or 1\n", path, i + 2,
                v);
        goto cleanup;
      } else {
        data->y[i] = (float)v;
      }
      p = end + 1;
    }
  }
  rc = 0;
cleanup:
  fclose(f);
  return rc;
}

/* A fixed permutation of 0..n-1 (Fisher-Yates on xorshift64), so the split is the same on
 * every machine. */
static void shuffle(int64_t* idx, int64_t n) {
  uint64_t s = 0x2545F4914F6CDD1Dull;
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const int64_t j = (int64_t)(s % (uint64_t)(i + 1));
    const int64_t t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
}

/* Makes the tensors x [count, d] and y [count, 1] of the samples idx[0..count). */
static int make_split(const Dataset* data, const int64_t* idx, int64_t count, int32_t f32,
                      LoomTensor** x, LoomTensor** y) {
  int rc = 1;
  float* xs = malloc(sizeof(float) * (size_t)(count * data->d));
  float* ys = malloc(sizeof(float) * (size_t)count);
  if (!xs || !ys) {
    fprintf(stderr, "logreg_c: out of memory\n");
    goto cleanup;
  }
  for (int64_t i = 0; i < count; ++i) {
    memcpy(xs + i * data->d, data->x + idx[i] * data->d, sizeof(float) * (size_t)data->d);
    ys[i] = data->y[idx[i]];
  }
  const int64_t x_sizes[2] = {count, data->d}, y_sizes[2] = {count, 1};
  CHECK(api->TensorFromData(xs, x_sizes, 2, f32, "cpu", x));
  CHECK(api->TensorFromData(ys, y_sizes, 2, f32, "cpu", y));
  rc = 0;
cleanup:
  free(xs);
  free(ys);
  return rc;
}

/* Replaces *x by (*x - mean) / std. */
static int standardize(LoomTensor** x, LoomTensor* mean, LoomTensor* std) {
  int rc = 1;
  LoomTensor *centered = NULL, *scaled = NULL;
  const LoomValue sub_args[2] = {tensor_arg(*x), tensor_arg(mean)};
  CHECK(call(ops.sub, sub_args, 2, &centered));
  const LoomValue div_args[2] = {tensor_arg(centered), tensor_arg(std)};
  CHECK(call(ops.div, div_args, 2, &scaled));
  api->TensorRelease(*x);
  *x = scaled;
  scaled = NULL;
  rc = 0;
cleanup:
  api->TensorRelease(centered);
  api->TensorRelease(scaled);
  return rc;
}

/* The logits b + x @ w, [count, 1]. */
static LoomStatus* forward(LoomTensor* x, LoomTensor* w, LoomTensor* b, LoomTensor** out) {
  const LoomValue args[3] = {tensor_arg(b), tensor_arg(x), tensor_arg(w)};
  return call(ops.addmm, args, 3, out);
}

/* p -= lr * p.grad, outside autograd, then clears p.grad. */
static int update(LoomTensor* p, double lr) {
  int rc = 1;
  LoomTensor *grad = NULL, *same = NULL;
  const bool was_enabled = api->SetGradEnabled(false);
  CHECK(api->TensorGrad(p, &grad));
  if (!grad) {
    fprintf(stderr, "logreg_c: backward left a parameter without a gradient\n");
    goto cleanup;
  }
  const LoomValue args[3] = {tensor_arg(p), tensor_arg(grad), float_arg(lr)};
  CHECK(call(ops.sub_, args, 3, &same));
  CHECK(api->TensorSetGrad(p, NULL));
  rc = 0;
cleanup:
  api->SetGradEnabled(was_enabled);
  api->TensorRelease(grad);
  api->TensorRelease(same);
  return rc;
}

/* One full-batch gradient-descent step; writes the loss before the step into *loss_value. */
static int train_step(LoomTensor* x, LoomTensor* y, LoomTensor* w, LoomTensor* b, double lr,
                      double* loss_value) {
  int rc = 1;
  LoomTensor *logits = NULL, *loss = NULL;
  CHECK(forward(x, w, b, &logits));
  const LoomValue args[2] = {tensor_arg(logits), tensor_arg(y)}; /* reduction = mean */
  CHECK(call(ops.bce, args, 2, &loss));
  CHECK(api->TensorItem(loss, loss_value));
  CHECK(api->Backward(loss, NULL, false));
  if (update(w, lr) || update(b, lr)) goto cleanup;
  rc = 0;
cleanup:
  api->TensorRelease(logits);
  api->TensorRelease(loss);
  return rc;
}

/* The share of samples whose predicted class (logit > 0) is their label. */
static int accuracy(LoomTensor* x, LoomTensor* y, LoomTensor* w, LoomTensor* b, double* out) {
  int rc = 1;
  LoomTensor* logits = NULL;
  float *z = NULL, *labels = NULL;
  const bool was_enabled = api->SetGradEnabled(false);
  int64_t count = 0;
  CHECK(api->TensorNumel(y, &count));
  CHECK(forward(x, w, b, &logits));
  z = malloc(sizeof(float) * (size_t)count);
  labels = malloc(sizeof(float) * (size_t)count);
  if (!z || !labels) {
    fprintf(stderr, "logreg_c: out of memory\n");
    goto cleanup;
  }
  CHECK(api->TensorCopyToHost(logits, z, sizeof(float) * (size_t)count));
  CHECK(api->TensorCopyToHost(y, labels, sizeof(float) * (size_t)count));
  int64_t right = 0;
  for (int64_t i = 0; i < count; ++i) right += (z[i] > 0.0f) == (labels[i] > 0.5f);
  *out = (double)right / (double)count;
  rc = 0;
cleanup:
  api->SetGradEnabled(was_enabled);
  api->TensorRelease(logits);
  free(z);
  free(labels);
  return rc;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: logreg_c <breast_cancer.csv> [epochs=500] [learning_rate=0.5]\n");
    return 2;
  }
  const long epochs = argc > 2 ? strtol(argv[2], NULL, 10) : 500;
  const double lr = argc > 3 ? strtod(argv[3], NULL) : 0.5;
  if (epochs <= 0 || !(lr > 0.0)) {
    fprintf(stderr, "logreg_c: epochs and learning_rate must be positive\n");
    return 2;
  }

  api = loom_get_api(LOOM_API_VERSION);
  if (!api) {
    fprintf(stderr, "logreg_c: libloom implements ABI version %u, this program needs %d\n",
            (unsigned)loom_api_version(), LOOM_API_VERSION);
    return 1;
  }

  int rc = 1;
  Dataset data = {0, 0, NULL, NULL};
  int64_t* idx = NULL;
  LoomTensor *x_train = NULL, *y_train = NULL, *x_test = NULL, *y_test = NULL;
  LoomTensor *mean = NULL, *std = NULL, *w = NULL, *b = NULL;

  const int data_rc = read_csv(argv[1], &data);
  if (data_rc) {
    rc = data_rc;
    goto cleanup;
  }
  CHECK(api->Init());
  CHECK(find_ops());
  int32_t f32 = 0;
  CHECK(api->DTypeFromName("float32", &f32));
  printf("loom %s: %lld samples, %lld features\n", api->VersionString(), (long long)data.n,
         (long long)data.d);

  /* 80/20 split of a fixed permutation. */
  idx = malloc(sizeof(int64_t) * (size_t)data.n);
  if (!idx) {
    fprintf(stderr, "logreg_c: out of memory\n");
    goto cleanup;
  }
  shuffle(idx, data.n);
  const int64_t n_test = data.n / 5, n_train = data.n - n_test;
  if (make_split(&data, idx, n_train, f32, &x_train, &y_train) ||
      make_split(&data, idx + n_train, n_test, f32, &x_test, &y_test)) {
    goto cleanup;
  }

  /* Standardize both splits with the training split's statistics. */
  const int64_t dim0[1] = {0};
  const LoomValue mean_args[3] = {tensor_arg(x_train), ints_arg(dim0, 1), bool_arg(true)};
  CHECK(call(ops.mean_dim, mean_args, 3, &mean));
  const LoomValue std_args[4] = {tensor_arg(x_train), ints_arg(dim0, 1), bool_arg(true),
                                 bool_arg(true)};
  CHECK(call(ops.std_dim, std_args, 4, &std));
  if (standardize(&x_train, mean, std) || standardize(&x_test, mean, std)) goto cleanup;

  /* Parameters: zeros, recording gradients. */
  const int64_t w_sizes[2] = {data.d, 1}, b_sizes[1] = {1};
  CHECK(api->TensorZeros(w_sizes, 2, f32, "cpu", &w));
  CHECK(api->TensorZeros(b_sizes, 1, f32, "cpu", &b));
  CHECK(api->TensorSetRequiresGrad(w, true));
  CHECK(api->TensorSetRequiresGrad(b, true));

  printf("training: %lld train / %lld test samples, %ld epochs, learning rate %g\n",
         (long long)n_train, (long long)n_test, epochs, lr);
  for (long epoch = 0; epoch < epochs; ++epoch) {
    double loss = 0.0;
    if (train_step(x_train, y_train, w, b, lr, &loss)) goto cleanup;
    if (epoch % PRINT_EVERY == 0 || epoch == epochs - 1)
      printf("epoch %4ld  loss %.4f\n", epoch, loss);
  }

  double train_acc = 0.0, test_acc = 0.0;
  if (accuracy(x_train, y_train, w, b, &train_acc) || accuracy(x_test, y_test, w, b, &test_acc)) {
    goto cleanup;
  }
  printf("train accuracy %.4f\ntest accuracy %.4f\n", train_acc, test_acc);
  if (test_acc < ACCURACY_FLOOR) {
    fprintf(stderr, "logreg_c: test accuracy %.4f is below the floor %.2f\n", test_acc,
            ACCURACY_FLOOR);
    rc = 3;
    goto cleanup;
  }
  rc = 0;

cleanup:
  api->TensorRelease(x_train);
  api->TensorRelease(y_train);
  api->TensorRelease(x_test);
  api->TensorRelease(y_test);
  api->TensorRelease(mean);
  api->TensorRelease(std);
  api->TensorRelease(w);
  api->TensorRelease(b);
  free(idx);
  free(data.x);
  free(data.y);
  return rc;
}
