#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

// Macros built of other macros, which Swift does not import.
static const int guidance_key_pair = EVP_PKEY_KEYPAIR;
static const int guidance_public_key = EVP_PKEY_PUBLIC_KEY;
// Parameter names as C strings that live as long as the process: a
// parameter builder keeps the name's pointer, and a Swift string passed
// for it is a temporary copy.
static const char *const guidance_param_group = OSSL_PKEY_PARAM_GROUP_NAME;
static const char *const guidance_param_public = OSSL_PKEY_PARAM_PUB_KEY;
static const char *const guidance_param_private = OSSL_PKEY_PARAM_PRIV_KEY;
