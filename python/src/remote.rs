//! `storage_options` (a dict, as fsspec takes them) as vzarr's [`RemoteOptions`].
//!
//! fsspec/s3fs spellings are understood (`anon`, `key`, `secret`, `token`, `endpoint_url` or
//! `client_kwargs={"endpoint_url": ...}`, `region_name`, `requester_pays`), plus `max_retries` and
//! `timeout` (seconds); any other key is passed to the object store's builder as it is (object_store
//! names such as `aws_endpoint`, `google_service_account`, `azure_storage_account_name`).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyDictMethods};
use vzarr::read::RemoteOptions;

/// The remote options `storage_options` give (defaults for `None`).
pub(crate) fn remote_options(storage_options: Option<&Bound<'_, PyDict>>) -> PyResult<RemoteOptions> {
    let mut remote = RemoteOptions::default();
    let Some(dict) = storage_options else { return Ok(remote) };
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        match key.as_str() {
            "anon" | "anonymous" => remote.anonymous = value.extract()?,
            "requester_pays" => remote.requester_pays = value.extract()?,
            "max_retries" => remote.max_retries = value.extract()?,
            "timeout" => remote.request_timeout = std::time::Duration::from_secs_f64(value.extract()?),
            "client_kwargs" => {
                let kwargs = value.cast::<PyDict>()?;
                if let Some(endpoint) = kwargs.get_item("endpoint_url")? {
                    set_endpoint(&mut remote, endpoint.extract()?);
                }
                if let Some(region) = kwargs.get_item("region_name")? {
                    remote.config.push(("aws_region".into(), region.extract()?));
                }
            }
            "endpoint_url" => set_endpoint(&mut remote, value.extract()?),
            "key" => remote.config.push(("aws_access_key_id".into(), value.extract()?)),
            "secret" => remote.config.push(("aws_secret_access_key".into(), value.extract()?)),
            "token" => remote.config.push(("aws_session_token".into(), value.extract()?)),
            "region" | "region_name" => remote.config.push(("aws_region".into(), value.extract()?)),
            _ => {
                let text = match value.extract::<bool>() {
                    Ok(b) => b.to_string(),
                    Err(_) => value.str()?.to_string(),
                };
                remote.config.push((key, text));
            }
        }
    }
    Ok(remote)
}

fn set_endpoint(remote: &mut RemoteOptions, endpoint: String) {
    if endpoint.starts_with("http://") {
        remote.config.push(("aws_allow_http".into(), "true".into()));
    }
    remote.config.push(("aws_endpoint".into(), endpoint));
}
