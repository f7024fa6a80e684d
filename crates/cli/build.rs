include!("../testkit/corpus_cfg.rs");
