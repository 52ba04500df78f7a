"""Old module path of :mod:`mechanism_model_core.package_paths` (finding ROS packages without ROS), a
foundation module since the mesh reader, which ``collision`` uses, needs it. Re-exports its public names."""

from ..package_paths import (PackageNotFound, add_package_path, clear_package_paths, find_package,
                             package_dirs, where_looked)

__all__ = ["PackageNotFound", "add_package_path", "clear_package_paths", "find_package", "package_dirs",
           "where_looked"]
