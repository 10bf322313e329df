fn main() {
    std::process::exit(netdoctor::main_with_args());
}
