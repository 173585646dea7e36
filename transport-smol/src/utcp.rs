//! UTCP's SSE provider on smol: [`ssekit_utcp`] (provider objects with auth and OAuth2
//! token refresh, tool calls checked against their schemas, `/utcp` discovery and
//! [`ManualEndpoint`]) over [`SmolHttp`](crate::client::SmolHttp); the same provider as
//! `ssekit_hyper::utcp`. Every item of [`ssekit_utcp`] is here under the same name.

ssekit_utcp::transport_module!(ssekit_smol, crate::client::SmolHttp);
