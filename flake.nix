{
  description = "cutile: safe, data-race-free GPU tile kernels written in Python";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    flake-utils.url = "github:numtide/flake-utils";
  };

  outputs = { self, nixpkgs, flake-utils }:
    flake-utils.lib.eachSystem [ "x86_64-linux" "aarch64-linux" ] (system:
      let
        pkgs = import nixpkgs { inherit system; config.allowUnfree = true; };
        python = pkgs.python311;
      in {
        # `nix develop`: Python, maturin, the Rust toolchain, and a CUDA 13 toolkit.
        # tileiras, ptxas and libnvvm of one pinned version come from PyPI (the `tileiras`
        # extra) into .venv, because nixpkgs does not package the Tile IR assembler.
        devShells.default = pkgs.mkShell {
          packages = [
            python
            python.pkgs.pip
            python.pkgs.virtualenv
            pkgs.maturin
            pkgs.cargo
            pkgs.rustc
            pkgs.rustfmt
            pkgs.clippy
            pkgs.cudaPackages_13.cuda_nvcc
            pkgs.cudaPackages_13.cuda_cudart
          ];
          shellHook = ''
            if [ ! -d .venv ]; then
              python -m venv .venv
            fi
            . .venv/bin/activate
            python -m pip install -q -e '.[tileiras,test]'
            # the pip tileiras must not take ptxas/libnvvm from an older CUDA_HOME
            unset CUDA_HOME CUDA_PATH
          '';
        };
      });
}
