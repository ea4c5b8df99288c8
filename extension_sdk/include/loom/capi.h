/* Loom's stable C ABI: what apps and out-of-tree extensions link against.
 *
 * Plain C99. Everything goes through one function table, fetched by version:
 *
 *     const LoomApi* api = loom_get_api(LOOM_API_VERSION);
 *     if (!api) { ... the library is older than this header ... }
 *     LoomTensor* x = NULL;
 *     LoomStatus* st = api->TensorEmpty(sizes, 2, dtype, "cpu", &x);
 *     if (st) { fprintf(stderr, "%s\n", api->StatusMessage(st)); api->StatusRelease(st); }
 *
 * Note [Stable ABI rules] (what keeps an old client working against a newer library):
 *  - The table is append-only. Every entry carries the version that added it; an entry is
 *    never removed, reordered or changed in meaning. Its offset is fixed (static asserts in
 *    the library and in the frozen-header test). A client asks for the version it was built
 *    with and may use exactly the entries of that version and older.
 *  - Every struct starts with `uint32_t struct_size` (sizeof as the client built it). The
 *    library accepts larger sizes from newer clients (and reads only the fields it knows),
 *    and smaller ones from older clients that predate a field.
 *  - Handles are opaque. Nothing in this header depends on the C++ standard library, the
 *    compiler, or Loom's internal enums: dtypes and device types are looked up by name at
 *    run time (DTypeFromName); the only numbers fixed here are the error codes and value
 *    kinds below, which are frozen and append-only too.
 *  - Every fallible call returns a LoomStatus*: NULL means success; otherwise the caller owns
 *    the status (code + message) and releases it with StatusRelease. Output parameters are
 *    written only on success. No exception ever crosses this boundary.
 *  - Ownership: a function that hands out a LoomTensor* gives the caller one reference;
 *    TensorRelease drops it. Tensors passed in are borrowed.
 */
#ifndef LOOM_CAPI_H_
#define LOOM_CAPI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/dispatcher/plugin_abi.h" /* LoomPluginContext, LoomPluginManifest */

#ifdef __cplusplus
extern "C" {
#endif

/** The newest table version this header describes (entries marked @since 2 are version 2's). */
#define LOOM_API_VERSION 2

#if defined(_WIN32)
#define LOOM_CAPI_EXPORT __declspec(dllimport)
#elif defined(__GNUC__)
#define LOOM_CAPI_EXPORT __attribute__((visibility("default")))
#else
#define LOOM_CAPI_EXPORT
#endif

/* ---- opaque handles ---- */

/** The outcome of a failed call: an error code and a message. NULL means success. */
typedef struct LoomStatus LoomStatus;
/** A reference to a tensor (sizes, strides, dtype, device, storage, autograd state). */
typedef struct LoomTensor LoomTensor;
/** A registered operator, found by schema name; valid for the life of the process. */
typedef struct LoomOp LoomOp;
/** A set of registrations (op definitions and kernels) undone together when released. */
typedef struct LoomLibrary LoomLibrary;
/** What a custom op's backward function sees: saved inputs/outputs, incoming gradients. */
typedef struct LoomBackwardContext LoomBackwardContext;
/** A snapshot of the registered ops' names and schemas (OpListCreate). @since 2 */
typedef struct LoomOpList LoomOpList;

/* ---- error codes (frozen, append-only) ---- */

/** Error codes; the message says the rest. Messages are written for C clients: they name the
 *  entry or op, the argument and the values, and carry no source locations of Loom's; they
 *  quote at most 200 characters of a string the caller passed (a name, a schema), then say how
 *  many more there were. A status a kernel or backward function returns reaches the caller
 *  with its code.
 *  LOOM_INVALID_ARGUMENT is misuse of this API (a NULL pointer where data is needed, a buffer
 *  of the wrong size, a bad struct_size or value kind); LOOM_VALUE_ERROR is a bad value the
 *  API was used correctly to pass (a negative size, shapes that do not match, an unknown enum
 *  name: Note [Enum arguments]); LOOM_TYPE_ERROR a bad type (an unknown dtype name or token,
 *  a wrong argument kind). */
typedef int32_t LoomErrorCode;
#define LOOM_OK 0                 /**< never in a status (NULL is success) */
#define LOOM_ERROR 1              /**< any other Loom error */
#define LOOM_VALUE_ERROR 2        /**< a bad value: shapes that do not match, a negative size */
#define LOOM_TYPE_ERROR 3         /**< a bad type: wrong dtype, wrong argument kind */
#define LOOM_INDEX_ERROR 4        /**< an index out of range */
#define LOOM_DEVICE_ERROR 5       /**< tensors on different devices, a device that is missing */
#define LOOM_NOT_IMPLEMENTED 6    /**< no such op, or no kernel for these inputs */
#define LOOM_REGISTRATION_ERROR 7 /**< a definition or kernel that conflicts */
#define LOOM_PLUGIN_ERROR 8       /**< a plugin file refused */
#define LOOM_AUTOGRAD_ERROR 9     /**< backward through a freed graph, in-place on a saved tensor */
#define LOOM_INVALID_ARGUMENT 10  /**< misuse of this API: a NULL pointer, a wrong-sized buffer */
#define LOOM_OUT_OF_MEMORY 11     /**< an allocation failed */

/* ---- boxed values: the arguments and returns of an op call ---- */

/** Kinds of LoomValue (frozen, append-only). */
typedef int32_t LoomValueKind;
#define LOOM_VALUE_NONE 0        /**< None (an omitted optional argument) */
#define LOOM_VALUE_TENSOR 1      /**< tensor (NULL = undefined tensor) */
#define LOOM_VALUE_INT 2         /**< int64 (also for Scalar) */
#define LOOM_VALUE_FLOAT 3       /**< double (also for Scalar) */
#define LOOM_VALUE_BOOL 4        /**< bool (also for Scalar) */
#define LOOM_VALUE_STRING 5      /**< NUL-terminated UTF-8 string (str, Device arguments) */
#define LOOM_VALUE_INT_LIST 6    /**< int64 array (int[], SymInt[]) */
#define LOOM_VALUE_TENSOR_LIST 7 /**< tensor array (Tensor[]) */
#define LOOM_VALUE_FLOAT_LIST 8  /**< double array (float[]) */
#define LOOM_VALUE_DTYPE 9       /**< a dtype token from DTypeFromName (ScalarType arguments) */

/* Note [Enum arguments]: some integer arguments stand for one of PyTorch's enums. OpCall
 * (since version 2 of the library) takes them by name, as a LOOM_VALUE_STRING, and checks
 * integers against the same list:
 *   `int reduction`            none (0), mean (1), sum (2)
 *   MemoryFormat arguments     contiguous_format (0), preserve_format (1), channels_last (2),
 *                              channels_last_3d (3)
 *   Layout arguments           strided (0)
 * An unknown name, or an integer that is none of the values, fails with LOOM_VALUE_ERROR
 * naming the op, the argument and the allowed names; OpArgumentEnumNames lists them. A
 * ScalarType argument takes a dtype name ("float32") as well as a token. Kernels registered
 * through this API receive the integer. */

/** One boxed value. Zero-initialise, set struct_size = sizeof(LoomValue), kind, and one member.
 *  Arrays of values: the library steps by the first element's struct_size. */
typedef struct LoomValue {
  uint32_t struct_size; /**< sizeof(LoomValue) as the client built it */
  LoomValueKind kind;   /**< which member is meaningful */
  union {
    LoomTensor* tensor; /**< LOOM_VALUE_TENSOR */
    int64_t i;          /**< LOOM_VALUE_INT, LOOM_VALUE_DTYPE */
    double f;           /**< LOOM_VALUE_FLOAT */
    bool b;             /**< LOOM_VALUE_BOOL */
    const char* s;      /**< LOOM_VALUE_STRING */
    struct {
      const int64_t* data; /**< elements */
      size_t size;         /**< number of elements */
    } ints;                /**< LOOM_VALUE_INT_LIST */
    struct {
      LoomTensor* const* data; /**< elements (borrowed in arguments, owned in returns) */
      size_t size;             /**< number of elements */
    } tensors;                 /**< LOOM_VALUE_TENSOR_LIST */
    struct {
      const double* data; /**< elements */
      size_t size;        /**< number of elements */
    } floats;             /**< LOOM_VALUE_FLOAT_LIST */
  } u;                    /**< the value */
} LoomValue;

/** A kernel for one dispatch key of an op, called with the op's arguments in schema order
 *  (trailing defaults filled in; tensors borrowed). It writes exactly one value per return of
 *  the schema into returns (tensors as new references the library takes over) and returns
 *  NULL, or a status made with StatusCreate. user_data is what was given at registration.
 *  A TENSOR_LIST return's elements are new references too; its array (and any string or
 *  list data) is read after the kernel returns, so it must stay valid until the kernel's next
 *  call on the same thread (a thread_local buffer). */
typedef LoomStatus* (*LoomKernelFn)(void* user_data, const LoomValue* args, size_t num_args,
                                    LoomValue* returns, size_t num_returns);

/** The backward of a custom op: reads ctx (saved inputs and outputs, gradients of the outputs)
 *  and sets one gradient per tensor input that needs one (BackwardSetGradInput). */
typedef LoomStatus* (*LoomBackwardFn)(void* user_data, LoomBackwardContext* ctx);

/** Releases registration user_data when the registration is undone (may be NULL). */
typedef void (*LoomReleaseFn)(void* user_data);

/** The function table. Entries are grouped by the version that added them. */
typedef struct LoomApi {
  uint32_t struct_size; /**< sizeof(LoomApi) as the library was built */
  uint32_t version;     /**< the newest version the library implements */

  /* ======== version 1 ======== */

  /* -- status -- */
  /** v1: The error code of a status (LOOM_OK for NULL). */
  LoomErrorCode (*StatusCode)(const LoomStatus* status);
  /** v1: The message of a status ("" for NULL); valid until the status is released. */
  const char* (*StatusMessage)(const LoomStatus* status);
  /** v1: Frees a status (NULL is allowed). */
  void (*StatusRelease)(LoomStatus* status);
  /** v1: Makes a status, for kernels and backward functions to report an error. */
  LoomStatus* (*StatusCreate)(LoomErrorCode code, const char* message);

  /* -- library -- */
  /** v1: Loom's version, "0.1.0". */
  const char* (*VersionString)(void);
  /** v1: Loads the default plugins (ops_core, and ops_nn / cpu_onednn / cuda when installed);
   *  idempotent. Call once before using ops. */
  LoomStatus* (*Init)(void);

  /* -- dtypes and devices -- */
  /** v1: The token of a dtype by name ("float32", "float", "int64", "long", "bool", ...). */
  LoomStatus* (*DTypeFromName)(const char* name, int32_t* out);
  /** v1: The canonical name of a dtype token ("float32"), or NULL for an unknown token. */
  const char* (*DTypeName)(int32_t dtype);
  /** v1: The size of one element in bytes. */
  LoomStatus* (*DTypeItemSize)(int32_t dtype, size_t* out);
  /** v1: The number of devices of a type ("cuda"): 0 when its plugin is loaded but no device
   *  is usable, or when no loaded plugin provides the type; *reason (optional, may be NULL)
   *  then points at a sentence saying which and why, valid for the life of the process. */
  LoomStatus* (*DeviceCount)(const char* device_type, int32_t* out, const char** reason);
  /** v1: The native current stream of a device ("cuda:0": a cudaStream_t), NULL for devices
   *  without streams. Custom CUDA kernels launch on it. */
  LoomStatus* (*DeviceCurrentStream)(const char* device, void** out);
  /** v1: Waits until the device has finished its queued work. */
  LoomStatus* (*DeviceSynchronize)(const char* device);
  /** v1: Seeds every generator (CPU and loaded devices), as torch.manual_seed. */
  LoomStatus* (*ManualSeed)(uint64_t seed);

  /* -- tensors -- */
  /** v1: A new tensor of the given sizes, dtype and device ("cpu", "cuda:0") holding a copy of
   *  data (contiguous, row-major, numel * itemsize bytes, host memory). */
  LoomStatus* (*TensorFromData)(const void* data, const int64_t* sizes, size_t ndim, int32_t dtype,
                                const char* device, LoomTensor** out);
  /** v1: A new uninitialised tensor. */
  LoomStatus* (*TensorEmpty)(const int64_t* sizes, size_t ndim, int32_t dtype, const char* device,
                             LoomTensor** out);
  /** v1: A new tensor of zeros. */
  LoomStatus* (*TensorZeros)(const int64_t* sizes, size_t ndim, int32_t dtype, const char* device,
                             LoomTensor** out);
  /** v1: Adds a reference (returns t). */
  LoomTensor* (*TensorRetain)(LoomTensor* t);
  /** v1: Drops a reference (NULL is allowed). */
  void (*TensorRelease)(LoomTensor* t);
  /** v1: Number of dimensions. */
  LoomStatus* (*TensorDim)(const LoomTensor* t, size_t* out);
  /** v1: Number of elements. */
  LoomStatus* (*TensorNumel)(const LoomTensor* t, int64_t* out);
  /** v1: Copies the sizes into out[0..capacity); *ndim receives the dimension count (fails with
   *  LOOM_INVALID_ARGUMENT when capacity is smaller, after writing *ndim). */
  LoomStatus* (*TensorSizes)(const LoomTensor* t, int64_t* out, size_t capacity, size_t* ndim);
  /** v1: Copies the strides (in elements) like TensorSizes. */
  LoomStatus* (*TensorStrides)(const LoomTensor* t, int64_t* out, size_t capacity, size_t* ndim);
  /** v1: The dtype token. */
  LoomStatus* (*TensorDType)(const LoomTensor* t, int32_t* out);
  /** v1: The device as text ("cpu", "cuda:0") into out (NUL-terminated, capacity bytes). */
  LoomStatus* (*TensorDevice)(const LoomTensor* t, char* out, size_t capacity);
  /** v1: The address of the first element (storage offset applied); NULL for 0 elements. */
  LoomStatus* (*TensorDataPtr)(const LoomTensor* t, void** out);
  /** v1: Copies the elements, in row-major order, to host memory (nbytes must be numel*itemsize);
   *  works for any strides and device. */
  LoomStatus* (*TensorCopyToHost)(const LoomTensor* t, void* out, size_t nbytes);
  /** v1: The value of a one-element tensor as a double. */
  LoomStatus* (*TensorItem)(const LoomTensor* t, double* out);
  /** v1: "[2, 3] cpu float32" (Loom's description, as error messages show tensors). */
  LoomStatus* (*TensorDescribe)(const LoomTensor* t, char* out, size_t capacity);

  /* -- autograd -- */
  /** v1: Whether t records operations for gradients. */
  LoomStatus* (*TensorRequiresGrad)(const LoomTensor* t, bool* out);
  /** v1: Sets requires_grad on a leaf (floating-point) tensor. */
  LoomStatus* (*TensorSetRequiresGrad)(LoomTensor* t, bool requires_grad);
  /** v1: The accumulated gradient of t, or *out = NULL if none. */
  LoomStatus* (*TensorGrad)(const LoomTensor* t, LoomTensor** out);
  /** v1: Replaces t's gradient (grad NULL: none, as zero_grad(set_to_none=True)). */
  LoomStatus* (*TensorSetGrad)(LoomTensor* t, LoomTensor* grad);
  /** v1: A tensor sharing t's data, cut from the graph. */
  LoomStatus* (*TensorDetach)(const LoomTensor* t, LoomTensor** out);
  /** v1: Backpropagates from root (grad NULL: root must have one element; ones are used). */
  LoomStatus* (*Backward)(LoomTensor* root, LoomTensor* grad, bool retain_graph);
  /** v1: Whether this thread records gradients (grad mode). */
  bool (*GradEnabled)(void);
  /** v1: Turns grad mode on or off on this thread; returns the previous setting. Off is
   *  torch.no_grad(). */
  bool (*SetGradEnabled)(bool enabled);

  /* -- operators -- */
  /** v1: Finds an op by schema name ("aten::add.Tensor", or "add.Tensor" for aten; "mm" is the
   *  overload-less name). Unknown names fail with LOOM_NOT_IMPLEMENTED naming close matches. */
  LoomStatus* (*OpFind)(const char* name, const LoomOp** out);
  /** v1: The op's schema text; valid for the life of the process. */
  const char* (*OpSchema)(const LoomOp* op);
  /** v1: Calls op with boxed arguments in schema order (trailing defaults may be omitted; enum
   *  arguments by name, Note [Enum arguments]). Writes
   *  its returns into returns (release them with ValuesRelease) and their number into
   *  *num_returns; capacity smaller than the schema's return count is LOOM_INVALID_ARGUMENT.
   *  Set struct_size in every returns slot as in every argument (the library steps by it). An
   *  op returning its argument (in-place, out=) returns a new reference. */
  LoomStatus* (*OpCall)(const LoomOp* op, const LoomValue* args, size_t num_args,
                        LoomValue* returns, size_t capacity, size_t* num_returns);
  /** v1: Releases the tensors, lists and strings held by values handed out by the library. */
  void (*ValuesRelease)(LoomValue* values, size_t count);

  /* -- plugins -- */
  /** v1: Loads a plugin by name ("cpu_onednn") or path to a .so; refused plugins fail with
   *  LOOM_PLUGIN_ERROR and the loader's reason, leaving the process as it was. */
  LoomStatus* (*PluginLoad)(const char* name_or_path);
  /** v1: Unloads a plugin by name. Refused with LOOM_PLUGIN_ERROR and the reason while
   *  anything of it is still reachable: another plugin depending on it, tensors in memory of
   *  its allocator, or autograd graphs holding its backward functions (release those tensors,
   *  outputs and losses first). A refused unload changes nothing. */
  LoomStatus* (*PluginUnload)(const char* name);
  /** v1: Number of loaded plugins. */
  LoomStatus* (*PluginCount)(size_t* out);
  /** v1: Name and version of loaded plugin i (valid until it unloads). */
  LoomStatus* (*PluginInfo)(size_t index, const char** name, const char** version);

  /* -- registering ops and kernels -- */
  /** v1: A library for namespace ns owned by the caller: LibraryRelease undoes everything it
   *  registered. It claims ns (a second library for the same ns is refused). ns NULL: a
   *  library of no namespace, for kernels of ops defined elsewhere (qualified names such as
   *  "aten::add.Tensor"). A ns that is no identifier of the schema language ("", "a b", "1x":
   *  ASCII letters, digits and '_', not starting with a digit) is LOOM_VALUE_ERROR. */
  LoomStatus* (*LibraryCreate)(const char* ns, LoomLibrary** out);
  /** v1: A library for namespace ns owned by a loading plugin: its registrations are undone
   *  when the plugin unloads (do not release it). Use inside register_plugin. ns as for
   *  LibraryCreate. */
  LoomStatus* (*PluginLibrary)(LoomPluginContext* ctx, const char* ns, LoomLibrary** out);
  /** v1: Undoes a caller-owned library's registrations and frees it (NULL is allowed). */
  void (*LibraryRelease)(LoomLibrary* library);
  /** v1: Defines an op from a schema ("myops::scale(Tensor x, float k) -> Tensor"). */
  LoomStatus* (*LibraryDef)(LoomLibrary* library, const char* schema);
  /** v1: Registers kernel for op at dispatch_key ("CPU", "CUDA", ...). op must be defined
   *  already (by LibraryDef, or by a plugin the caller depends on). release (may be NULL)
   *  frees user_data when the registration is undone; a call that fails never calls it (the
   *  caller still owns user_data). */
  LoomStatus* (*LibraryImpl)(LoomLibrary* library, const char* op, const char* dispatch_key,
                             LoomKernelFn kernel, void* user_data, LoomReleaseFn release);
  /** v1: Gives op a derivative: calls of op with inputs that require grad record a node whose
   *  backward is fn. All tensor arguments and returns are saved for fn. Lifetime: graphs
   *  recorded before LibraryRelease may still run fn afterwards, so release is called when
   *  the library is released *and* the last autograd node that may call fn is gone (at once
   *  if there is none); fn's code must stay loaded until then. A call that fails never calls
   *  release. */
  LoomStatus* (*LibraryImplBackward)(LoomLibrary* library, const char* op, LoomBackwardFn fn,
                                     void* user_data, LoomReleaseFn release);

  /* -- inside a backward function -- */
  /** v1: Number of tensor inputs (tensor arguments of the op, in schema order). */
  size_t (*BackwardNumInputs)(const LoomBackwardContext* ctx);
  /** v1: Number of outputs of the op. */
  size_t (*BackwardNumOutputs)(const LoomBackwardContext* ctx);
  /** v1: Saved tensor input i (borrowed; valid during the call). */
  LoomStatus* (*BackwardInput)(const LoomBackwardContext* ctx, size_t i, const LoomTensor** out);
  /** v1: Saved output i (borrowed). */
  LoomStatus* (*BackwardOutput)(const LoomBackwardContext* ctx, size_t i, const LoomTensor** out);
  /** v1: The gradient of output i (borrowed; zeros if none arrived). */
  LoomStatus* (*BackwardGradOutput)(const LoomBackwardContext* ctx, size_t i,
                                    const LoomTensor** out);
  /** v1: Whether tensor input i needs a gradient. */
  bool (*BackwardNeedsInputGrad)(const LoomBackwardContext* ctx, size_t i);
  /** v1: Sets the gradient of tensor input i (borrowed; the library keeps its own reference). */
  LoomStatus* (*BackwardSetGradInput)(LoomBackwardContext* ctx, size_t i, LoomTensor* grad);
  /** v1: A non-tensor argument by position in the schema (tensors are BackwardInput's); strings
   *  and lists are borrowed and valid during the call. */
  LoomStatus* (*BackwardArgument)(const LoomBackwardContext* ctx, size_t position, LoomValue* out);

  /* ======== end of version 1 — append newer entries below, never above ======== */

  /* ======== version 2 ======== */

  /* -- listing operators -- */
  /** A snapshot of every defined op, sorted by name: *out receives a new list that the caller
   *  owns (release it with OpListRelease). Ops defined or removed later (plugins loading and
   *  unloading) do not change it. @since 2 */
  LoomStatus* (*OpListCreate)(LoomOpList** out);
  /** The number of ops in list (0 for NULL). @since 2 */
  size_t (*OpListSize)(const LoomOpList* list);
  /** Op `index` of list: *name receives its full name ("aten::add.Tensor", what OpFind takes)
   *  and *schema its schema text, both borrowed from the list (valid until OpListRelease);
   *  either output may be NULL. An index past the end is LOOM_INDEX_ERROR. @since 2 */
  LoomStatus* (*OpListGet)(const LoomOpList* list, size_t index, const char** name,
                           const char** schema);
  /** Frees a list from OpListCreate (NULL is allowed). @since 2 */
  void (*OpListRelease)(LoomOpList* list);
  /** The op's full name ("aten::add.Tensor"); borrowed, valid for the life of the process (""
   *  for NULL). @since 2 */
  const char* (*OpName)(const LoomOp* op);
  /** The names the argument called `argument` of op takes in place of an integer (Note [Enum
   *  arguments]): *out receives a NULL-terminated array of static strings ({"none", "mean",
   *  "sum", NULL} for reduction), or NULL for an argument that is no enum. An argument name
   *  the schema lacks is LOOM_VALUE_ERROR naming the op's arguments. @since 2 */
  LoomStatus* (*OpArgumentEnumNames)(const LoomOp* op, const char* argument,
                                     const char* const** out);

  /* ======== end of version 2 — append newer entries below, never above ======== */
} LoomApi;

/** The function table of the given version, or NULL when the library is older than version.
 *  The table is static: never freed. Thread-safe. */
LOOM_CAPI_EXPORT const LoomApi* loom_get_api(uint32_t version);

/** The newest table version the library implements. */
LOOM_CAPI_EXPORT uint32_t loom_api_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_CAPI_H_ */
