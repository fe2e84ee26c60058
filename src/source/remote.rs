//! Object stores for URLs: `s3://` (and `s3a://`), `gs://`, `az://` / `abfs://` / `abfss://`,
//! `http://` / `https://`, each configured as its users expect: credentials, region and endpoint
//! from the standard environment variables (`AWS_*` including `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`
//! and `AWS_REQUEST_PAYER`; `GOOGLE_*`; `AZURE_*`), plus [`RemoteOptions`] for anonymous access,
//! requester-pays buckets, retries with backoff and request timeouts.
//!
//! A store is built once per scheme and bucket (or host) and shared by every object in it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

/// How remote stores are reached.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RemoteOptions {
    /// Send unsigned requests (public buckets). Default: false (credentials from the environment).
    pub anonymous: bool,
    /// Accept the charges of requester-pays S3 buckets. Default: false (or `AWS_REQUEST_PAYER`).
    pub requester_pays: bool,
    /// Retries of a failed request (timeouts, 5xx, throttling), with exponential backoff.
    /// Default: 5.
    pub max_retries: usize,
    /// Time one request may take before it is abandoned (and retried). Default: 30 s.
    pub request_timeout: Duration,
    /// Store configuration applied after the environment, as `object_store` names the keys
    /// (`aws_endpoint`, `aws_allow_http`, `aws_access_key_id`, `google_service_account`,
    /// `azure_storage_account_name`, ...). Default: none.
    pub config: Vec<(String, String)>,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            anonymous: false,
            requester_pays: false,
            max_retries: 5,
            request_timeout: Duration::from_secs(30),
            config: Vec::new(),
        }
    }
}

/// A URL no store can be built for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The scheme is not one vzarr reaches.
    #[error("{url}: unsupported URL scheme {scheme:?} (use s3://, gs://, az://, abfs://, http:// or https://)")]
    Scheme {
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// The URL's backend was left out of this build (its Cargo feature is off).
    #[error("{url}: this build of vzarr cannot reach such URLs (built without the `{feature}` feature)")]
    NotBuilt {
        /// The URL.
        url: String,
        /// The Cargo feature that builds its backend.
        feature: &'static str,
    },
    /// The store's builder refused its configuration (missing bucket, bad endpoint, ...).
    #[error("{url}: cannot configure the object store: {source}")]
    Configure {
        /// The URL.
        url: String,
        /// Why.
        source: object_store::Error,
    },
}

/// The store holding `url`'s object and the object's path in it.
///
/// # Errors
/// [`RemoteError`] for an unsupported scheme or a configuration the store's builder refuses.
pub fn store_for_url(
    url: &url::Url,
    options: &RemoteOptions,
) -> Result<(Arc<dyn ObjectStore>, ObjectPath), RemoteError> {
    // The port is part of the key: two servers on one host are two stores. So is the user name: in
    // `abfs://container@account.dfs.core.windows.net/...` it is the container.
    let host = format!("{}@{}{}", url.username(), url.host_str().unwrap_or_default(), port_suffix(url));
    let key = (url.scheme().to_string(), host, options.clone());
    static STORES: OnceLock<Mutex<HashMap<StoreKey, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let stores = STORES.get_or_init(Default::default);
    let path = object_path(url);
    if let Some(store) = stores.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key) {
        return Ok((store.clone(), path));
    }
    let store = build(url, options)?;
    stores.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key, store.clone());
    Ok((store, path))
}

type StoreKey = (String, String, RemoteOptions);

fn object_path(url: &url::Url) -> ObjectPath {
    let raw = url.path().trim_start_matches('/');
    // Object keys in URLs are percent-encoded; the store's paths are not.
    let decoded = percent_decode(raw);
    ObjectPath::from(decoded.as_str())
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn build(url: &url::Url, options: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
    match url.scheme() {
        "s3" | "s3a" => backends::s3(url, options),
        "gs" => backends::gcs(url, options),
        "az" | "abfs" | "abfss" | "adl" | "azure" => backends::azure(url, options),
        "http" | "https" => backends::http(url, options),
        scheme => Err(RemoteError::Scheme { url: url.to_string(), scheme: scheme.to_string() }),
    }
}

/// One builder per backend, each behind its Cargo feature; a backend left out of the build is a
/// [`RemoteError::NotBuilt`].
mod backends {
    use std::sync::Arc;

    use object_store::ObjectStore;

    use super::{RemoteError, RemoteOptions};

    #[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
    mod settings {
        use object_store::{BackoffConfig, RetryConfig};

        use super::super::{RemoteError, RemoteOptions};

        /// Retries with exponential backoff, each attempt bounded by the request timeout.
        pub(super) fn retry(options: &RemoteOptions) -> RetryConfig {
            RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: options.max_retries,
                retry_timeout: options.request_timeout * (options.max_retries as u32 + 1),
            }
        }

        /// The request timeout, then the explicit settings, as configuration keys: the client settings
        /// the builders read from the environment (allow_http, proxies, certificates) stay in force.
        pub(super) fn pairs(options: &RemoteOptions) -> Vec<(String, String)> {
            let timeout = ("timeout".to_string(), format!("{}ms", options.request_timeout.as_millis()));
            std::iter::once(timeout).chain(options.config.iter().cloned()).collect()
        }

        pub(super) fn unknown_key(url: &url::Url, key: &str) -> RemoteError {
            RemoteError::Configure {
                url: url.to_string(),
                source: object_store::Error::UnknownConfigurationKey { store: "vzarr", key: key.to_string() },
            }
        }

        pub(super) fn configure(url: &url::Url) -> impl Fn(object_store::Error) -> RemoteError + '_ {
            move |source| RemoteError::Configure { url: url.to_string(), source }
        }

        /// `scheme://host` of `url`, which the builders take.
        pub(super) fn base(url: &url::Url) -> String {
            format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default())
        }
    }

    #[cfg(not(all(feature = "aws", feature = "gcp", feature = "azure", feature = "http")))]
    fn not_built(url: &url::Url, feature: &'static str) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        Err(RemoteError::NotBuilt { url: url.to_string(), feature })
    }

    #[cfg(feature = "aws")]
    pub(super) fn s3(url: &url::Url, options: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        let mut builder = object_store::aws::AmazonS3Builder::from_env()
            .with_url(settings::base(url))
            .with_retry(settings::retry(options));
        for (key, value) in settings::pairs(options) {
            builder = builder.with_config(key.parse().map_err(|_| settings::unknown_key(url, &key))?, value);
        }
        builder = builder.with_skip_signature(options.anonymous);
        if options.requester_pays {
            builder = builder.with_request_payer(true);
        }
        Ok(Arc::new(builder.build().map_err(settings::configure(url))?))
    }

    #[cfg(not(feature = "aws"))]
    pub(super) fn s3(url: &url::Url, _: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        not_built(url, "aws")
    }

    #[cfg(feature = "gcp")]
    pub(super) fn gcs(url: &url::Url, options: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        let mut builder = object_store::gcp::GoogleCloudStorageBuilder::from_env()
            .with_url(settings::base(url))
            .with_retry(settings::retry(options));
        for (key, value) in settings::pairs(options) {
            builder = builder.with_config(key.parse().map_err(|_| settings::unknown_key(url, &key))?, value);
        }
        Ok(Arc::new(builder.with_skip_signature(options.anonymous).build().map_err(settings::configure(url))?))
    }

    #[cfg(not(feature = "gcp"))]
    pub(super) fn gcs(url: &url::Url, _: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        not_built(url, "gcp")
    }

    #[cfg(feature = "azure")]
    pub(super) fn azure(url: &url::Url, options: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        let mut builder = object_store::azure::MicrosoftAzureBuilder::from_env()
            .with_url(url.as_str())
            .with_retry(settings::retry(options));
        for (key, value) in settings::pairs(options) {
            builder = builder.with_config(key.parse().map_err(|_| settings::unknown_key(url, &key))?, value);
        }
        Ok(Arc::new(builder.with_skip_signature(options.anonymous).build().map_err(settings::configure(url))?))
    }

    #[cfg(not(feature = "azure"))]
    pub(super) fn azure(url: &url::Url, _: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        not_built(url, "azure")
    }

    #[cfg(feature = "http")]
    pub(super) fn http(url: &url::Url, options: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        let client = object_store::ClientOptions::new().with_timeout(options.request_timeout).with_allow_http(true);
        let store = object_store::http::HttpBuilder::new()
            .with_url(format!("{}{}", settings::base(url), super::port_suffix(url)))
            .with_retry(settings::retry(options))
            .with_client_options(client)
            .build()
            .map_err(settings::configure(url))?;
        Ok(Arc::new(store))
    }

    #[cfg(not(feature = "http"))]
    pub(super) fn http(url: &url::Url, _: &RemoteOptions) -> Result<Arc<dyn ObjectStore>, RemoteError> {
        not_built(url, "http")
    }
}

/// An object store error in one line that says what failed: `not found`, `access denied (...)`, else
/// the error without the XML document servers append to their error responses.
pub(crate) fn describe_error(e: &object_store::Error) -> String {
    let text = e.to_string();
    let text = text.split("<?xml").next().unwrap_or_default();
    let brief = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let brief = brief.trim_end_matches(':').to_string();
    match e {
        object_store::Error::NotFound { .. } => "not found".to_string(),
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            format!("access denied: {brief}")
        }
        _ if brief.contains("403 Forbidden") || brief.contains("401 Unauthorized") => {
            format!("access denied: {brief}")
        }
        _ => brief,
    }
}

fn port_suffix(url: &url::Url) -> String {
    url.port().map(|p| format!(":{p}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_paths_are_decoded_from_urls() {
        let url = url::Url::parse("s3://bucket/a%20b/c.nc").unwrap();
        assert_eq!(object_path(&url).as_ref(), "a b/c.nc");
    }

    #[test]
    #[cfg(all(feature = "aws", feature = "gcp"))]
    fn stores_accept_the_timeout_and_explicit_settings() {
        let options = RemoteOptions {
            config: vec![("aws_region".into(), "eu-west-1".into())],
            request_timeout: Duration::from_secs(7),
            ..RemoteOptions::default()
        };
        let s3 = url::Url::parse("s3://bucket/a/b.nc").unwrap();
        assert_eq!(store_for_url(&s3, &options).unwrap().1.as_ref(), "a/b.nc");
        let gs = url::Url::parse("gs://bucket/x.nc").unwrap();
        let anonymous = RemoteOptions { anonymous: true, ..RemoteOptions::default() };
        assert!(store_for_url(&gs, &anonymous).is_ok());
        let bad = RemoteOptions { config: vec![("no_such_key".into(), "1".into())], ..RemoteOptions::default() };
        assert!(store_for_url(&s3, &bad).unwrap_err().to_string().contains("no_such_key"));
    }

    #[test]
    #[cfg(feature = "azure")]
    fn azure_containers_are_told_apart() {
        let options = RemoteOptions {
            config: vec![("azure_storage_use_emulator".into(), "true".into())],
            ..RemoteOptions::default()
        };
        let store = |u: &str| store_for_url(&url::Url::parse(u).unwrap(), &options).unwrap();
        let (a, path) = store("abfs://one@acct.dfs.core.windows.net/d/x.nc");
        let (b, _) = store("abfs://two@acct.dfs.core.windows.net/d/x.nc");
        assert_eq!(path.as_ref(), "d/x.nc");
        assert!(!Arc::ptr_eq(&a, &b), "two containers of one account are two stores");
        assert!(Arc::ptr_eq(&a, &store("abfs://one@acct.dfs.core.windows.net/e.nc").0));
        let (c, path) = store("az://one/d/x.nc");
        assert_eq!(path.as_ref(), "d/x.nc");
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(store("abfss://one@acct.dfs.core.windows.net/d/x.nc").1.as_ref(), "d/x.nc");
    }

    #[test]
    fn errors_are_described_in_one_line() {
        let not_found = object_store::Error::NotFound { path: "a".into(), source: "gone".into() };
        assert_eq!(describe_error(&not_found), "not found");
        let xml = "list failed: 403 Forbidden: <?xml version=\"1.0\"?>\n<Error>\n<Code>x</Code></Error>";
        let generic = object_store::Error::Generic { store: "MicrosoftAzure", source: xml.into() };
        assert_eq!(describe_error(&generic), "access denied: Generic MicrosoftAzure error: list failed: 403 Forbidden");
    }

    #[test]
    #[cfg(not(feature = "aws"))]
    fn backends_left_out_of_the_build_are_named() {
        let s3 = url::Url::parse("s3://bucket/a.nc").unwrap();
        let err = store_for_url(&s3, &RemoteOptions::default()).err().unwrap().to_string();
        assert_eq!(
            err,
            "s3://bucket/a.nc: this build of vzarr cannot reach such URLs (built without the `aws` feature)"
        );
    }

    #[test]
    fn unknown_schemes_are_named() {
        let url = url::Url::parse("ftp://host/x.nc").unwrap();
        let err = store_for_url(&url, &RemoteOptions::default()).unwrap_err();
        assert!(err.to_string().contains("unsupported URL scheme \"ftp\""), "{err}");
    }
}
